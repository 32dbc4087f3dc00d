"""``claire worklist``: a whole corpus (or a list of its articles) checked, each contradiction
resolved and listed once, ranked — ``worklist.jsonl`` and ``worklist.wiki`` in the run directory.
With ``--key`` the worklist is scored against planted contradictions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from claire.cli.options import ConcurrencyOpt, JsonOpt, Settings, SystemOpt, console, err, require_api_key, run, with_settings
from claire.errors import ConfigError, ExitCode

if TYPE_CHECKING:
    from claire.config import Config
    from claire.jobs.worklist import Estimate, WorklistRun


def read_titles(path: Path) -> list[str]:
    """The titles of a file, one a line (blank lines and ``#`` comments skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the titles file {path}: {getattr(error, 'strerror', None) or error}") from None
    titles = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not titles:
        raise ConfigError(f"{path} lists no titles (one article title a line)")
    return titles


@with_settings("index", "languages", "language", "preset", "model", "base_url", "no_cache", "config_file", "sets")
def worklist_command(
    titles: Annotated[Optional[Path], typer.Option("--titles", help="A file of article titles, one a line.")] = None,
    category: Annotated[Optional[str], typer.Option("--category", help="The articles of a category (through the Action API of --api-url).")] = None,
    wikiproject: Annotated[Optional[str], typer.Option("--wikiproject", help="The articles a WikiProject tags (its 'WikiProject NAME articles' category).")] = None,
    pagepile: Annotated[Optional[int], typer.Option("--pagepile", help="The pages of a PagePile, by its id.")] = None,
    all_articles: Annotated[bool, typer.Option("--all", help="Every article of the index.")] = False,
    api_url: Annotated[str, typer.Option("--api-url", help="The wiki's Action API for --category and --wikiproject.")] = "https://en.wikipedia.org/w/api.php",
    pagepile_url: Annotated[str, typer.Option("--pagepile-url", help="PagePile's API for --pagepile.")] = "https://pagepile.toolforge.org/api.php",
    out: Annotated[Path, typer.Option("--out", help="The run directory (resumed when it exists).")] = Path("out/worklist"),
    system: SystemOpt = None,
    max_facts: Annotated[Optional[int], typer.Option("--max-facts", min=1, help="Check at most N facts of each article.")] = None,
    max_cost: Annotated[Optional[float], typer.Option("--max-cost", min=0.0, help="Stop the checks once the run has spent this many US dollars.")] = None,
    key: Annotated[Optional[Path], typer.Option("--key", help="A key of planted contradictions (JSONL): score the worklist against it.")] = None,
    concurrency: ConcurrencyOpt = None,
    engine: Annotated[Optional[str], typer.Option("--engine", help="local (this process, the default) or ray (a pool of Ray actors; eval.engine).")] = None,
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="The Ray cluster to join (auto, or ray://HOST:10001); unset: a local Ray.")] = None,
    ray_workers: Annotated[Optional[int], typer.Option("--ray-workers", min=1, help="Ray actors, each holding the configured system (eval.ray_workers).")] = None,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """Check every article of a list (or the whole index), resolve each contradiction once and write a ranked worklist. With --languages, each article's infobox is first compared with its counterparts' (no LLM call). Exit 0 no contradiction, 1 some listed, 2 error."""
    chosen = [name for name, value in (("--titles", titles), ("--category", category), ("--wikiproject", wikiproject),
                                       ("--pagepile", pagepile), ("--all", all_articles or None)) if value is not None]
    if not chosen:
        raise ConfigError("give the articles to check: --titles FILE, --category NAME, --wikiproject NAME, "
                          "--pagepile ID, or --all for every article of the index")
    if "--all" in chosen and len(chosen) > 1:
        raise ConfigError(f"--all checks every article of the index: give it without {', '.join(chosen[:-1])}")
    config = settings.batch(system, concurrency, **{"eval.engine": engine, "eval.ray_address": ray_address,
                                                    "eval.ray_workers": ray_workers})
    wanted = read_titles(titles) if titles is not None else [] if not all_articles else None
    if category or wikiproject or pagepile is not None:
        from claire.jobs.worklist import listed_titles

        with err.status("reading the list of articles from the wiki…"):
            wanted = (wanted or []) + run(listed_titles(category=category, wikiproject=wikiproject, pagepile=pagepile,
                                                        api_url=api_url, pagepile_url=pagepile_url,
                                                        user_agent=config.watch.user_agent))
        if not wanted:
            raise ConfigError("the wiki lists no articles for " + ", ".join(chosen))
    corpus_run(config, titles=wanted, out=out, key=key, max_facts=max_facts, max_cost=max_cost, as_json=as_json)


def corpus_run(config: Config, *, titles: list[str] | None, out: Path, key: Path | None, max_facts: int | None = None,
               max_cost: float | None = None, as_json: bool = False) -> None:
    """Run the corpus and show (or print as JSON) its worklist; scored when a key is given. Exits
    with the status README's rule gives: 1 when something is listed."""
    pairs = None
    if key is not None:
        from claire.resolving.worklist import load_key

        pairs = load_key(key)
    require_api_key(config)
    if config.agent.task != "wikicollide":
        raise ConfigError(f"claire worklist checks WikiCollide-style facts, not the {config.agent.task} task")
    from claire.jobs.worklist import run_worklist

    shown = err if as_json else console

    def said(planned: Estimate) -> None:
        shown.print("[bold]estimate[/]: " + "\n          ".join(planned.lines()))

    result = run(run_worklist(config=config, out_dir=out, titles=titles, max_facts_per_article=max_facts,
                              max_cost=max_cost, console=err, show_progress=not as_json, on_estimate=said))
    scores = None
    if pairs is not None:
        from claire.resolving.worklist import score_worklist

        scores = score_worklist(result.entries, pairs)
        (out / "worklist_metrics.json").write_text(json.dumps(scores, indent=2), encoding="utf-8")
    if as_json:
        print(json.dumps({"entries": [e.model_dump(mode="json") for e in result.entries], "metrics": scores,
                          "facts": result.facts, "flagged": result.flagged}, indent=2, ensure_ascii=False))
    else:
        show_worklist(result, scores)
    if result.budget_reached:
        err.print(f"[yellow]stopped at the budget[/] (--max-cost {max_cost:g}): {result.unchecked} fact(s) not checked; "
                  "run the same command again, with a higher budget, to go on")
    raise typer.Exit(ExitCode.FLAGGED if result.entries else ExitCode.OK)


def show_worklist(result: WorklistRun, scores: dict[str, Any] | None) -> None:
    """The ranked entries as a table, then where the files are (and the key's figures)."""
    from claire.tasks.sides.records import DECISION_WORDS

    table = Table(title=f"{len(result.entries)} contradiction(s) from {result.facts} facts of {len(result.articles)} "
                  f"article(s), most certain first", title_justify="left", expand=True)
    for column, ratio in (("article", 1), ("statement", 3), ("other article", 1), ("decision", 1), ("conf.", None)):
        table.add_column(column, ratio=ratio, justify="right" if column == "conf." else "left")
    for entry in result.entries:
        if len(entry.sides) != 2:
            continue
        first, second = entry.sides
        if entry.should_change == second.document_title and first.document_title != second.document_title:
            first, second = second, first
        def where(side: Any) -> str:  # a side of another edition says which (two editions may share a title)
            return side.document_title + (f" ({side.language})" if side.language else "")

        decision = (f"{where(first)} should change" if entry.should_change
                    else DECISION_WORDS.get(entry.decision or "", "failed"))
        confidence = f"{entry.confidence:.2f}" if entry.confidence and entry.decision != "unknown" else "—"
        statement = first.sentence or first.text
        if first.translation:
            statement += f"\n(translation by the model: {first.translation})"
        table.add_row(where(first), statement, where(second), decision, confidence)
    console.print(table)
    console.print(f"worklist: {result.out_dir}/worklist.jsonl and {result.out_dir}/worklist.wiki (wikitext to paste)")
    if scores is not None:
        console.print(f"against the key: {scores['found']} of {scores['planted']} planted pairs found, "
                      f"{scores['not_planted']} entr{'y' if scores['not_planted'] == 1 else 'ies'} not planted, "
                      f"right side {scores['right_side']} of {scores['found']}, {scores['duplicates']} duplicate(s)")
