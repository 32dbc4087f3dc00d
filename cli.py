"""The ``claire`` command: check a fact or a passage, build and search indexes, run evaluations,
sweeps and benchmarks. Thin wrappers over ``evals``, ``agent``, ``tools`` and ``indexes``;
every :class:`claire.errors.ClaireError` becomes a one-line message and exit code 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from claire import __version__
from claire.config import Config, load_config, parse_assignment
from claire.errors import ClaireError, ConfigError

console = Console()
err = Console(stderr=True)

app = typer.Typer(
    name="claire",
    help="CLAIRE finds facts in Wikipedia that another part of Wikipedia contradicts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
index_app = typer.Typer(help="Build, list and inspect search indexes.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print speed figures.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
app.add_typer(index_app, name="index")
app.add_typer(bench_app, name="bench")
app.add_typer(config_app, name="config")

# -- options shared by most commands ---------------------------------------------------------
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="A claire.toml to read (default: ./claire.toml).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Override any setting: section.field=value (repeatable).")]
ModelOpt = Annotated[Optional[str], typer.Option("--model", help="LLM model name (llm.model).")]
BaseUrlOpt = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible endpoint (llm.base_url).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]
RefreshOpt = Annotated[bool, typer.Option("--refresh-cache", help="Ignore cached answers and store fresh ones.")]
IndexOpt = Annotated[Optional[str], typer.Option("--index", help="Index name (retrieval.index; default: the demo corpus).")]
PathOpt = Annotated[Optional[Path], typer.Option("--path", help="Folder holding embedded indexes (retrieval.path).")]
UrlOpt = Annotated[Optional[str], typer.Option("--url", help="Qdrant server URL instead of the embedded engine (retrieval.url).")]


def resolve(
    config_file: Path | None = None,
    sets: list[str] | None = None,
    **flags: Any,
) -> Config:
    """defaults < claire.toml < environment < --set < explicit flags (None means not given)."""
    overrides: dict[str, Any] = dict(parse_assignment(item) for item in sets or [])
    overrides.update({key: value for key, value in flags.items() if value is not None})
    return load_config(config_file, overrides)


def common(model: str | None, base_url: str | None, no_cache: bool, refresh: bool, index: str | None,
           path: Path | None = None, url: str | None = None) -> dict[str, Any]:
    return {
        "llm.model": model,
        "llm.base_url": base_url,
        "llm.cache": False if no_cache else None,
        "llm.refresh_cache": True if refresh else None,
        "retrieval.index": index,
        "retrieval.path": str(path) if path else None,
        "retrieval.url": url,
    }


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def version_callback(value: bool) -> None:
    if value:
        console.print(f"claire {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version.")] = False,
) -> None:
    """CLAIRE: corpus-level inconsistency detection with an LLM agent."""


# -- config ----------------------------------------------------------------------------------
@config_app.command("show")
def config_show(config_file: ConfigOpt = None, sets: SetOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Print the resolved configuration (secrets masked)."""
    config = resolve(config_file, sets)
    data = config.public_dict()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    from rich.table import Table

    for section, values in data.items():
        table = Table(title=f"\\[{section}]", title_justify="left", show_header=False, box=None, padding=(0, 2))
        for key, value in values.items():
            table.add_row(key, json.dumps(value) if not isinstance(value, str) else value)
        console.print(table)


# -- indexes ---------------------------------------------------------------------------------
@index_app.command("build")
def index_build(
    corpus: Annotated[Optional[Path], typer.Argument(help="Corpus JSONL (one block per line).")] = None,
    name: Annotated[str, typer.Option("--name", help="Index name.")] = ...,
    embedder: Annotated[str, typer.Option("--embedder", help="minilm (offline default), mgte, or a sentence-transformers id/path.")] = "minilm",
    from_wikicollide: Annotated[Optional[Path], typer.Option("--from-wikicollide", help="Build from a WikiCollide dataset's passages.")] = None,
    from_article: Annotated[Optional[list[Path]], typer.Option("--from-article", help="Plain article text (## headings start sections); repeatable. The file name is the title.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip bad corpus lines (counted) instead of stopping.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Rebuild an existing index of that name.")] = False,
    path: PathOpt = None,
    url: UrlOpt = None,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
    from_dump: Annotated[Optional[Path], typer.Option("--from-dump", help="A Wikipedia dump: MediaWiki XML (.xml, .xml.bz2) or Enterprise HTML (.ndjson, .json.gz, .tar.gz). Re-run to resume.")] = None,
    limit_pages: Annotated[Optional[int], typer.Option("--limit-pages", help="Dump builds: stop after N pages (for trials).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Dump builds: parsing processes (default: cores - 1 on a GPU; on a CPU cores/4, none on 2 cores; 0 parses inline).")] = None,
    device: Annotated[str, typer.Option("--device", help="Dump builds: encode on cuda (fp16), cpu, or auto.")] = "auto",
    encode_processes: Annotated[int, typer.Option("--encode-processes", help="Dump builds on CPU: encoding processes.")] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Dump builds: passages per encode batch.")] = 256,
) -> None:
    """Embed a corpus into a named index (embedded Qdrant engine, or a Qdrant server with --url)."""
    from claire.indexes.corpus import blocks_from_article, blocks_from_wikicollide, read_corpus
    from claire.indexes.retriever import build_index

    config = resolve(config_file, sets, **{"retrieval.path": str(path) if path else None, "retrieval.url": url})
    if sum(source is not None for source in (corpus, from_wikicollide, from_article, from_dump)) != 1:
        raise ConfigError("give one source: a CORPUS.jsonl, --from-wikicollide DATASET.json, --from-article FILE or --from-dump DUMP")
    if from_dump is not None:
        from claire.indexes.ingest import build_from_dump

        summary = build_from_dump(from_dump, name=name, root=config.retrieval.index_root(), url=config.retrieval.url,
                                  api_key=_qdrant_key(config), embedder=embedder, replace=replace,
                                  options=_ingest_options(config, limit_pages, workers, device, encode_processes, batch_size))
        _print_ingest(summary)
        return
    if from_article:
        blocks, invalid = [], 0
        for article in from_article:
            blocks += blocks_from_article(article.stem.replace("_", " "), _passage_text(None, article))
    elif from_wikicollide is not None:
        blocks, invalid = blocks_from_wikicollide(from_wikicollide), 0
    else:
        loaded = read_corpus(corpus, skip_invalid=skip_invalid)
        blocks, invalid = loaded.blocks, loaded.invalid
        for message in loaded.errors[:10]:
            err.print(f"[yellow]skipped[/] {escape(message)}")
    summary = build_index(
        blocks, name=name, embedder=embedder, root=config.retrieval.index_root(), url=config.retrieval.url,
        api_key=_qdrant_key(config), replace=replace,
    )
    size = f"{summary.size_on_disk / 1e6:.1f} MB" if summary.size_on_disk else "n/a (server)"
    console.print(
        f"[green]built[/] index [bold]{summary.name}[/]: {summary.blocks} blocks from {summary.documents} articles "
        f"in {summary.seconds:.1f} s ({summary.blocks_per_s:.0f} blocks/s), {size} on disk"
        + (f"; {invalid} invalid lines skipped" if invalid else "")
    )


def _ingest_options(config: Config, limit_pages, workers, device, encode_processes, batch_size):  # noqa: ANN202
    from claire.indexes.ingest import IngestOptions, default_workers
    from claire.indexes.stores import ServerOptions

    r = config.retrieval
    if limit_pages is not None and limit_pages < 1:
        raise ConfigError(f"--limit-pages must be at least 1 (got {limit_pages})")
    return IngestOptions(
        workers=default_workers(device) if workers is None else workers, batch_size=batch_size,
        limit_pages=limit_pages, device=device, encode_processes=encode_processes,
        server=ServerOptions(shards=r.server_shards, on_disk=r.server_on_disk, int8=r.server_int8,
                             upload_parallel=r.upload_parallel),
    )


def _print_ingest(summary) -> None:  # noqa: ANN001
    from claire.indexes.ingest import skip_counts_line

    s = summary
    verb = {"build": "resumed and built" if s.resumed else "built", "update": "updated"}[s.mode]
    console.print(
        f"[green]{verb}[/] index [bold]{s.name}[/]: {s.blocks:,} blocks from {s.articles:,} articles; this run read "
        f"{s.pages_read:,} pages ({s.pages_per_s:.0f}/s) and wrote {s.blocks_written:,} blocks ({s.blocks_per_s:.1f}/s, "
        f"encoding on {s.device}) in {s.seconds:.1f} s"
    )
    console.print(f"pages: {s.new:,} new, {s.changed:,} changed, {s.unchanged:,} unchanged"
                  + (f", {s.removed:,} removed" if s.mode == "update" else "")
                  + f"; skipped in the index: {skip_counts_line(s)}")


def _qdrant_key(config: Config) -> str | None:
    key = config.retrieval.qdrant_api_key
    return key.get_secret_value() if key else None


@index_app.command("update")
def index_update(
    name: Annotated[str, typer.Argument(help="The index to update (built with --from-dump).")],
    from_dump: Annotated[Path, typer.Option("--from-dump", help="The newer dump (same formats as build).")] = ...,
    limit_pages: Annotated[Optional[int], typer.Option("--limit-pages", help="Stop after N pages (no deletions then).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Parsing processes (default as for index build).")] = None,
    device: Annotated[str, typer.Option("--device", help="Encode on cuda (fp16), cpu, or auto.")] = "auto",
    encode_processes: Annotated[int, typer.Option("--encode-processes", help="Encoding processes on CPU.")] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Passages per encode batch.")] = 256,
    path: PathOpt = None,
    url: UrlOpt = None,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Re-index pages whose revision changed in a newer dump, add new ones, delete vanished ones."""
    from claire.indexes.ingest import update_from_dump

    config = resolve(config_file, sets, **{"retrieval.path": str(path) if path else None, "retrieval.url": url})
    summary = update_from_dump(from_dump, name=name, root=config.retrieval.index_root(), url=config.retrieval.url,
                               api_key=_qdrant_key(config),
                               options=_ingest_options(config, limit_pages, workers, device, encode_processes, batch_size))
    _print_ingest(summary)


@index_app.command("list")
def index_list(path: PathOpt = None, url: UrlOpt = None, config_file: ConfigOpt = None, sets: SetOpt = None) -> None:
    """List the indexes (embedded ones under the index folder, or on the Qdrant server)."""
    from rich.table import Table

    from claire.indexes.stores import list_indexes

    config = resolve(config_file, sets, **{"retrieval.path": str(path) if path else None, "retrieval.url": url})
    metas = list_indexes(config.retrieval.index_root(), config.retrieval.url, api_key=_qdrant_key(config))
    if not metas:
        where = config.retrieval.url or config.retrieval.index_root()
        console.print(f"no indexes at {where} (the demo index is built on first use of `claire search` or `claire check`)")
        return
    table = Table("name", "blocks", "articles", "embedder", "dim", "created")
    for meta in metas:
        table.add_row(meta.name, str(meta.blocks), str(meta.documents), meta.embedder, str(meta.dim), str(meta.created_at)[:19])
    console.print(table)


@index_app.command("info")
def index_info(name: Annotated[str, typer.Argument()], path: PathOpt = None, url: UrlOpt = None,
               config_file: ConfigOpt = None, sets: SetOpt = None) -> None:
    """Show what an index records: embedder, corpus stats, build time, size."""
    from claire.indexes.stores import list_indexes

    config = resolve(config_file, sets, **{"retrieval.path": str(path) if path else None, "retrieval.url": url})
    metas = {m.name: m for m in list_indexes(config.retrieval.index_root(), config.retrieval.url, api_key=_qdrant_key(config))}
    if name not in metas:
        raise ConfigError(f"unknown index '{name}'; available: {', '.join(metas) or 'none'}")
    for key, value in metas[name].to_dict().items():
        console.print(f"[bold]{key}[/]: {value}")


# -- search ----------------------------------------------------------------------------------
@app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    k: Annotated[int, typer.Option("-k", help="Number of results.")] = 10,
    exclude_title: Annotated[Optional[str], typer.Option("--exclude-title", help="Leave out this article.")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Rerank with RankGPT through the LLM (search never reranks otherwise).")] = False,
    mode: Annotated[Optional[str], typer.Option("--mode", help="hybrid (default), dense or bm25.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    index: IndexOpt = None,
    path: PathOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Search an index and print the ranked blocks."""
    from claire.agent.llm import LLMClient
    from claire.agent.runtime import open_retrieval, prompt_library, search_tool

    if not query.strip():
        raise ConfigError("the query is empty")
    config = resolve(config_file, sets, **common(model, base_url, False, False, index, path, url),
                     **{"retrieval.rerank": rerank, "retrieval.mode": mode})

    async def go() -> list[Any]:
        llm = LLMClient.from_config(config.llm) if config.retrieval.rerank else None
        retriever = open_retrieval(config)
        try:
            tool = search_tool(config, retriever, llm, prompt_library(config))  # type: ignore[arg-type]
            return await tool.search(query, exclude_title=exclude_title, k=k)
        finally:
            retriever.close()
            if llm:
                await llm.aclose()

    hits = run(go())
    if as_json:
        print(json.dumps([{"rank": h.rank, "score": h.score, **h.block.model_dump()} for h in hits], indent=2, ensure_ascii=False))
        return
    from claire.views import hits_table

    console.print(hits_table(hits, query))


# -- check -----------------------------------------------------------------------------------
@app.command("check")
def check_command(
    fact: Annotated[str, typer.Argument(help="The fact to check.")],
    title: Annotated[Optional[str], typer.Option("--title", help="The fact's article (excluded from search).")] = None,
    section: Annotated[Optional[str], typer.Option("--section", help="The fact's section.")] = None,
    context: Annotated[Optional[str], typer.Option("--context", help="The passage the fact comes from.")] = None,
    context_file: Annotated[Optional[Path], typer.Option("--context-file", help="Read the passage from a file.")] = None,
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", help="Step budget (agent.max_steps).")] = None,
    docs_per_query: Annotated[Optional[int], typer.Option("--docs-per-query", help="Passages per search (agent.docs_per_query).")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Turn RankGPT reranking off.")] = False,
    tools: Annotated[Optional[str], typer.Option("--tools", help="Enabled tools, e.g. search,clarify_entity,explain.")] = None,
    no_review: Annotated[bool, typer.Option("--no-review", help="Do not pause for you to review reported inconsistencies.")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the two-sided report.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Assessment as JSON only.")] = False,
    trace_out: Annotated[Optional[Path], typer.Option("--trace-out", help="Write the trace (WikiCollide agent_trace shape) here.")] = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Check one fact against the corpus. Exit code: 0 consistent, 1 inconsistent, 2 error."""
    from claire.agent.system import Claim, ContextBlock

    if not fact.strip():
        raise ConfigError("the fact is empty: give the sentence to check")
    if context_file is not None:
        context = _passage_text(None, context_file)
    if trace_out is not None and not trace_out.parent.is_dir():
        raise ConfigError(f"--trace-out: the folder {trace_out.parent} does not exist")
    interactive = sys.stdin.isatty() and not as_json and not no_review
    config = resolve(
        config_file, sets, **common(model, base_url, no_cache, refresh_cache, index),
        **{
            "agent.system": system,
            "agent.max_steps": max_steps,
            "agent.docs_per_query": docs_per_query,
            "retrieval.rerank": False if no_rerank else None,
            "agent.tools": tools,
            "agent.report": False if no_report else None,
            "agent.review": interactive,
        },
    )
    if config.agent.report is None:  # the two-sided report is on by default for a single check
        config = config.with_overrides({"agent.report": True})
    claim = Claim(claim_id="cli", text=fact.strip(),
                  context=ContextBlock(document_title=title or "", section_title=section or "", content=(context or "").strip()))
    from claire.views import CheckView

    view = CheckView(console, claim, config, quiet=as_json)
    assessment = run(view.run())
    if trace_out is not None:
        try:
            trace_out.write_text(json.dumps([t.model_dump() for t in assessment.trace], indent=2, ensure_ascii=False), encoding="utf-8")
        except OSError as error:
            err.print(f"[red]error:[/] cannot write --trace-out {escape(str(trace_out))}: {escape(error.strerror or str(error))}")
    if as_json:
        print(assessment.model_dump_json(indent=2))
    else:
        view.final(assessment)
    if assessment.error and assessment.score is None:
        raise typer.Exit(2)
    raise typer.Exit(1 if assessment.verdict == "inconsistent" else 0)


# -- evaluation ------------------------------------------------------------------------------
DatasetOpt = Annotated[Path, typer.Option("--dataset", help="WikiCollide JSON (or JSONL) file, e.g. dev.json or test.json.")]
ConcurrencyOpt = Annotated[Optional[int], typer.Option("--concurrency", help="Claims in flight at once (eval.concurrency).")]


def _eval_config(config_file, sets, model, base_url, no_cache, refresh_cache, index, system=None, concurrency=None, **more) -> Config:
    config = resolve(config_file, sets, **common(model, base_url, no_cache, refresh_cache, index),
                     **{"agent.system": system, "eval.concurrency": concurrency}, **more)
    if config.llm.max_concurrency < config.eval.concurrency:
        err.print(f"[yellow]note:[/] {config.eval.concurrency} claims in flight but at most {config.llm.max_concurrency} "
                  "LLM calls at once (llm.max_concurrency); raise it if your endpoint allows")
    return config


@app.command("eval")
def eval_command(
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", help="Run directory (re-running the same command resumes it).")],
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N claims.")] = None,
    ids: Annotated[Optional[str], typer.Option("--ids", help="Only these claim ids (comma-separated).")] = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="Re-run only the claims that failed.")] = False,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Decision threshold (default 0.5; nli: a REFUTES count).")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps")] = None,
    docs_per_query: Annotated[Optional[int], typer.Option("--docs-per-query")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank")] = False,
    tools: Annotated[Optional[str], typer.Option("--tools")] = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Evaluate a system on WikiCollide: predictions.jsonl, metrics.json, report.md, roc.png."""
    from claire.agent.runtime import open_system
    from claire.evals.dataset import load_wikicollide
    from claire.evals.metrics import resolve_threshold
    from claire.evals.reporting import auroc_text
    from claire.evals.runner import run_eval

    config = _eval_config(config_file, sets, model, base_url, no_cache, refresh_cache, index, system, concurrency,
                          **{"agent.max_steps": max_steps, "agent.docs_per_query": docs_per_query,
                             "retrieval.rerank": False if no_rerank else None, "agent.tools": tools})
    if threshold is not None or threshold_from is not None:
        # the systems decide their verdicts with it, and config.json records it for `claire metrics`
        value, _ = resolve_threshold(config.agent.system, threshold=threshold, threshold_from=threshold_from)
        config = config.with_overrides({"baselines.nli_threshold" if config.agent.system == "nli" else "agent.threshold": value})
    claims = load_wikicollide(dataset)
    if ids:
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        unknown = sorted(set(wanted) - {c.claim_id for c in claims})
        if unknown:
            raise ConfigError(f"--ids names claims not in {dataset}: {', '.join(unknown)}")
        claims = [c for c in claims if c.claim_id in set(wanted)]
    if limit is not None:
        claims = claims[:limit]

    async def go():
        async with open_system(config) as system_:
            return await run_eval(claims, system_, out, concurrency=config.eval.concurrency, config_public=config.public_dict(),
                                  retry_errors=retry_errors, dataset=dataset, console=err)

    summary = run(go())
    metrics = summary.metrics
    console.print(f"[bold]{summary.system}[/] on {summary.total} claims ({summary.ran} run now, {summary.skipped} already done, "
                  f"{summary.errors} errors) in {summary.wall_time_s:.1f} s")
    console.print(f"AUROC {auroc_text(metrics)} · {metrics.get('covers', '')}")
    console.print(f"wrote {out}/predictions.jsonl, metrics.json, report.md" + (", roc.png" if (out / "roc.png").exists() else ""))
    if summary.total and summary.errors >= summary.total:
        err.print("[red]error:[/] no claim could be scored; see the error column of predictions.jsonl")
        raise typer.Exit(2)


@app.command("metrics")
def metrics_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `claire eval`.")],
    threshold: Annotated[Optional[float], typer.Option("--threshold")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    split: Annotated[Optional[str], typer.Option("--split", help="validation or test (default: from the dataset name).")] = None,
) -> None:
    """Recompute metrics, report and ROC plot from a run's predictions alone."""
    from claire.evals.reporting import compare_runs
    from claire.evals.runner import score_run

    score_run(run_dir, threshold=threshold, threshold_from=threshold_from, split=split)
    console.print(compare_runs([run_dir]))
    console.print(f"rewrote {run_dir}/metrics.json and report.md")


@app.command("compare")
def compare_command(run_dirs: Annotated[list[Path], typer.Argument(help="Run directories; deltas are against the first.")]) -> None:
    """Side-by-side metrics of several runs, with deltas."""
    from claire.evals.reporting import compare_runs

    console.print(compare_runs(run_dirs))


@app.command("sweep")
def sweep_command(
    sweep_file: Annotated[Path, typer.Argument(help="A sweep YAML (see evals/sweeps/).")],
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", help="Sweep directory; one resumable run per cell.")],
    limit: Annotated[Optional[int], typer.Option("--limit")] = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells without running them.")] = False,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Run a grid of configurations (systems, tools, steps x docs, rerank, prompt variants, models)."""
    from claire.agent.runtime import open_system
    from claire.evals.sweep import plan_sweep, run_sweep

    config = _eval_config(config_file, sets, model, base_url, no_cache, refresh_cache, index, None, concurrency)
    if dry_run:
        plan = plan_sweep(sweep_file, config)
        console.print(f"sweep {plan.name}: {len(plan.cells)} cells")
        for cell in plan.cells:
            console.print(f"  {out / cell.dir_name}  ({cell.name})")
        return
    summary = run(run_sweep(sweep_file, dataset=dataset, out_dir=out, base_config=config, make_system=open_system,
                            limit=limit, concurrency=concurrency, retry_errors=retry_errors, console=err))
    console.print(f"sweep {summary.name}: {len(summary.cells)} cells in {summary.wall_time_s:.1f} s; see {out}/summary.md")


# -- passages --------------------------------------------------------------------------------
def _passage_text(text: str | None, file: Path | None) -> str:
    if (text is None) == (file is None):
        raise ConfigError("give the passage with either --text or --file")
    if file is not None:
        try:
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read {file}: {error}") from None
    return text or ""


@app.command("extract")
def extract_command(
    title: Annotated[str, typer.Option("--title", help="The article the passage is from.")],
    section: Annotated[str, typer.Option("--section")] = "",
    text: Annotated[Optional[str], typer.Option("--text", help="The passage.")] = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="Read the passage from a file.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Split a passage into atomic, self-contained facts."""
    from claire.agent.extraction import extract_facts
    from claire.agent.llm import LLMClient
    from claire.agent.runtime import prompt_library

    passage = _passage_text(text, file)
    config = resolve(config_file, sets, **common(model, base_url, no_cache, False, None))

    async def go():
        llm = LLMClient.from_config(config.llm)
        try:
            return await extract_facts(title=title, section=section, text=passage, llm=llm, prompts=prompt_library(config))
        finally:
            await llm.aclose()

    facts = run(go())
    if as_json:
        print(json.dumps([{"fact": f.text, "block": f.block} for f in facts], indent=2, ensure_ascii=False))
        return
    if not facts:
        err.print("no checkable facts were found in the text")
        raise typer.Exit(1)
    for number, fact in enumerate(facts, start=1):
        console.print(f"{number:>3}. {fact.text}")


@app.command("scan")
def scan_command(
    title: Annotated[str, typer.Option("--title", help="The article the passage is from (excluded from search).")],
    section: Annotated[str, typer.Option("--section")] = "",
    text: Annotated[Optional[str], typer.Option("--text", help="The passage.")] = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="Read the passage from a file.")] = None,
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    max_facts: Annotated[Optional[int], typer.Option("--max-facts", help="Check at most N facts.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Run directory (default runs/scan-TITLE).")] = None,
    concurrency: ConcurrencyOpt = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Extract every fact of a passage and check each one; flagged facts first."""
    from rich.table import Table

    from claire.workflows.scan import run_scan

    passage = _passage_text(text, file)
    config = _eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency)
    result = run(run_scan(title=title, section=section, text=passage, config=config, out_dir=out,
                          max_facts=max_facts, console=err))
    table = Table(title=f"facts of {title}, most suspicious first", title_justify="left", expand=True)
    table.add_column("score", justify="right", width=6)
    table.add_column("verdict", width=13)
    table.add_column("fact", ratio=3)
    table.add_column("key evidence", ratio=1)
    for row in result.rows:
        style = "bold red" if row.verdict == "inconsistent" else ("yellow" if row.error else "")
        table.add_row("—" if row.score is None else f"{row.score:.2f}", row.verdict or "error", row.fact,
                      row.key_evidence or "—", style=style)
    console.print(table)
    console.print(f"{len(result.flagged)} of {len(result.rows)} facts flagged; report: {result.out_dir}/scan.md")


# -- benchmarks ------------------------------------------------------------------------------
@bench_app.command("llm")
def bench_llm(calls: Annotated[int, typer.Option("--calls")] = 300) -> None:
    """LLM-layer overhead per call, concurrency speed-up and cache-hit latency (local mock server)."""
    from claire.bench.llm import run_llm_bench

    run_llm_bench(calls=calls, console=console)


@bench_app.command("retrieval")
def bench_retrieval(
    n: Annotated[int, typer.Option("--n", help="Synthetic blocks for the embedded engine.")] = 100_000,
    queries: Annotated[int, typer.Option("--queries")] = 200,
    baseline_n: Annotated[Optional[int], typer.Option("--baseline-n", help="Blocks for the qdrant-client local-mode baseline.")] = None,
) -> None:
    """Upsert rate, HNSW build, size and query latency: embedded engine vs qdrant-client local mode."""
    from claire.bench.retrieval import run_retrieval_bench

    run_retrieval_bench(n, queries=queries, baseline_n=baseline_n, console=console)


@bench_app.command("retrieval-quality")
def bench_retrieval_quality(
    dataset: DatasetOpt,
    k: Annotated[int, typer.Option("-k")] = 15,
    rerank: Annotated[bool, typer.Option("--rerank", help="Also hybrid + RankGPT (needs an LLM).")] = False,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Recall@k and MRR of dense, BM25, hybrid (and hybrid + RankGPT) on a WikiCollide file's traces."""
    import threading

    from claire.agent.llm import LLMClient
    from claire.agent.runtime import prompt_library
    from claire.bench.retrieval import run_retrieval_quality
    from claire.tools.rankgpt import RankGPTReranker

    reranker = None
    if rerank:
        config = resolve(config_file, sets, **common(model, base_url, False, False, None))
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        llm = LLMClient.from_config(config.llm)
        ranker = RankGPTReranker(llm, prompt_library(config), window=config.retrieval.rerank_window,
                                 step=config.retrieval.rerank_step, max_chars=config.retrieval.rerank_max_chars)

        def reranker(query, hits):  # the bench is synchronous; the LLM client lives on its own loop
            return asyncio.run_coroutine_threadsafe(ranker.rerank(query, hits), loop).result()

    run_retrieval_quality(dataset, k=k, console=console, reranker=reranker)


@bench_app.command("ingest")
def bench_ingest(
    pages: Annotated[int, typer.Option("--pages", help="Pages in the generated dump (parse rate over all of them).")] = 20_000,
    build_pages: Annotated[int, typer.Option("--build-pages", help="Pages the end-to-end build indexes.")] = 1_500,
    encode_sample: Annotated[int, typer.Option("--encode-sample", help="Blocks for the raw-encode figure.")] = 2_000,
    memory_pages: Annotated[str, typer.Option("--memory-pages", help="Comma-separated dump sizes for peak memory.")] = "5000,20000",
    workers: Annotated[Optional[int], typer.Option("--workers", help="Parsing processes for the build (default as for index build); the parse figure always also uses a pool of cores - 1 (at least 1).")] = None,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda or auto.")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Also print the figures as JSON.")] = False,
) -> None:
    """Dump ingestion: parse pages/s, raw encode vs end-to-end build blocks/s, peak memory by dump size, resume overhead."""
    from claire.bench.ingest import run_ingest_bench

    try:
        sizes = tuple(int(s) for s in memory_pages.split(",") if s.strip())
    except ValueError:
        raise ConfigError(f"--memory-pages takes comma-separated page counts (got {memory_pages!r})") from None
    figures = run_ingest_bench(pages=pages, build_pages=build_pages, encode_sample=encode_sample, memory_pages=sizes,
                               workers=workers, device=device, console=console)
    if as_json:
        print(json.dumps(figures, indent=2))


@bench_app.command("eval")
def bench_eval(
    claims: Annotated[int, typer.Option("--claims")] = 48,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    system: Annotated[str, typer.Option("--system", help="tiny (a 3-call stand-in), or the real claire / rav on the demo index.")] = "tiny",
) -> None:
    """Batch-eval throughput at concurrency 1 and 16 vs the ideal, and a warm-cache re-run."""
    from claire.bench.eval import run_eval_bench

    run_eval_bench(claims=claims, latency=latency, system=system, console=console)


def main() -> None:
    """Console-script entry point: clear messages instead of tracebacks."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        app()
    except ClaireError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as error:  # a bug: one line for the person, the traceback on request
        if os.environ.get("CLAIRE_DEBUG"):
            raise
        err.print(f"[bold red]internal error:[/] {escape(f'{type(error).__name__}: {error}')} "
                  "(set CLAIRE_DEBUG=1 for the traceback, and please report it)", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
