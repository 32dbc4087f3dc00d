"""The ``claire`` command: check a fact or a passage, build and search indexes, run evaluations,
sweeps and benchmarks. Thin wrappers over ``evals``, ``agent``, ``tools`` and ``indexes``;
every :class:`claire.errors.ClaireError` becomes a one-line message and exit code 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from claire import event_loop
from claire import __version__
from claire.config import TASK_NAMES, Config, ConfigWarning, load_config, parse_assignment
from claire.errors import ClaireError, ConfigError, redact

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
UrlOpt = Annotated[Optional[str], typer.Option("--url", help="Qdrant server URL, or a `claire serve` .../api/search endpoint, instead of the embedded engine (retrieval.url).")]


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
    return event_loop.run(coro)


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
    from rich.text import Text

    from claire.config_help import describe

    for section, values in data.items():
        table = Table(title=f"\\[{section}]", title_justify="left", show_header=False, box=None, padding=(0, 2))
        for key, value in values.items():
            table.add_row(key, json.dumps(value) if not isinstance(value, str) else value, Text(describe(section, key), style="dim"))
        console.print(table)


# -- indexes ---------------------------------------------------------------------------------
@index_app.command("build")
def index_build(
    corpus: Annotated[Optional[Path], typer.Argument(help="Corpus JSONL (one block per line).")] = None,
    name: Annotated[str, typer.Option("--name", help="Index name.")] = ...,
    embedder: Annotated[str, typer.Option("--embedder", help="minilm (offline default), mgte, or a sentence-transformers id/path.")] = "minilm",
    from_wikicollide: Annotated[Optional[Path], typer.Option("--from-wikicollide", help="Build from a WikiCollide dataset's passages.")] = None,
    from_article: Annotated[Optional[list[Path]], typer.Option("--from-article", help="Plain article text (## headings start sections); repeatable. The file name is the title.")] = None,
    from_feverous_pages: Annotated[Optional[Path], typer.Option("--from-feverous-pages", help="FEVEROUS wiki pages (JSONL, one page a line); blocks keep element ids.")] = None,
    from_web_docs: Annotated[Optional[Path], typer.Option("--from-web-docs", help="Web documents (JSONL: url, title, text), split into passages: a sources index for `claire cite`.")] = None,
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
    from claire.indexes.corpus import MAX_BLOCK_CHARS, blocks_from_article, blocks_from_wikicollide, read_corpus
    from claire.indexes.retriever import build_index

    config = resolve(config_file, sets, **{"retrieval.path": str(path) if path else None, "retrieval.url": url})
    if sum(source is not None for source in (corpus, from_wikicollide, from_article, from_feverous_pages, from_web_docs, from_dump)) != 1:
        raise ConfigError("give one source: a CORPUS.jsonl, --from-wikicollide DATASET.json, --from-article FILE, "
                          "--from-feverous-pages PAGES.jsonl, --from-web-docs FILE.jsonl or --from-dump DUMP")
    if from_dump is not None:
        from claire.indexes.ingest import build_from_dump

        summary = build_from_dump(from_dump, name=name, root=config.retrieval.index_root(), url=config.retrieval.url,
                                  api_key=_qdrant_key(config), embedder=embedder, replace=replace,
                                  options=_ingest_options(config, limit_pages, workers, device, encode_processes, batch_size))
        _print_ingest(summary)
        return
    if from_feverous_pages is not None:
        from claire.indexes.feverous_pages import blocks_from_feverous_pages

        blocks, invalid = blocks_from_feverous_pages(from_feverous_pages), 0
    elif from_web_docs is not None:
        from claire.indexes.web_docs import read_web_docs

        loaded = read_web_docs(from_web_docs, skip_invalid=skip_invalid, max_words=config.cite.passage_words)
        blocks, invalid = loaded.blocks, loaded.invalid
        for message in loaded.errors[:10]:
            err.print(f"[yellow]skipped[/] {escape(message)}")
    elif from_article:
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
        api_key=_qdrant_key(config), replace=replace, lock_timeout=config.retrieval.lock_timeout,
    )
    size = f"{summary.size_on_disk / 1e6:.1f} MB" if summary.size_on_disk else "n/a (server)"
    console.print(
        f"[green]built[/] index [bold]{summary.name}[/]: {summary.blocks} blocks from {summary.documents} articles "
        f"in {summary.seconds:.1f} s ({summary.blocks_per_s:.0f} blocks/s), {size} on disk"
        + (f"; {invalid} invalid lines skipped" if invalid else "")
        + (f"; {summary.split} blocks over {MAX_BLOCK_CHARS:,} characters split into parts" if summary.split else "")
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
    k: Annotated[int, typer.Option("-k", min=1, help="Number of results.")] = 10,
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
    fact: Annotated[Optional[str], typer.Argument(help="The fact to check.")] = None,
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
    task: Annotated[Optional[str], typer.Option("--task", help="wikicollide (default) or feverous: a three-way label with cited element ids (agent.task).")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="Go on with an interrupted interactive check (its thread id).")] = None,
    trace_out: Annotated[Optional[Path], typer.Option("--trace-out", help="Write the trace (WikiCollide agent_trace shape) here.")] = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Check one fact against the corpus. Exit code: 0 consistent, 1 inconsistent (--task feverous: REFUTES), 2 error."""
    from claire.agent.system import Claim, ContextBlock

    if resume is not None and (fact or as_json or no_review or not sys.stdin.isatty()):
        raise ConfigError("--resume goes on with a saved interactive check: give no fact, no --json and no --no-review, in a terminal")
    if resume is None and not (fact or "").strip():
        raise ConfigError("the fact is empty: give the sentence to check")
    if context_file is not None:
        context = _passage_text(None, context_file)
    if trace_out is not None:
        _check_writable(trace_out, "--trace-out")
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
            "agent.task": task,
        },
    )
    if config.agent.report is None:  # the two-sided report is on by default for a single check
        config = config.with_overrides({"agent.report": True})
    claim = None
    if resume is None:
        from claire.agent.fact_limits import check_fact

        if warning := check_fact((fact or "").strip(), config.agent.max_fact_chars):
            err.print(f"[yellow]warning:[/] {escape(warning)}")
        claim = Claim(claim_id="cli", text=(fact or "").strip(),
                      context=ContextBlock(document_title=title or "", section_title=section or "", content=(context or "").strip()))
    from claire.views import CheckView

    view = CheckView(console, claim, config, quiet=as_json, resume=resume)
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
    if assessment.error and assessment.score is None and assessment.label is None:
        raise typer.Exit(2)
    if assessment.label is not None:  # task feverous: 1 when refuted
        raise typer.Exit(1 if assessment.label == "REFUTES" else 0)
    raise typer.Exit(1 if assessment.verdict == "inconsistent" else 0)


# -- evaluation ------------------------------------------------------------------------------
DatasetOpt = Annotated[Path, typer.Option("--dataset", help="WikiCollide JSON (or JSONL) file, e.g. dev.json or test.json; with --task feverous a FEVEROUS JSONL file.")]
ConcurrencyOpt = Annotated[Optional[int], typer.Option("--concurrency", min=1, help="Claims in flight at once (eval.concurrency).")]


def _check_writable(path: Path, option: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if not path.parent.is_dir():
        raise ConfigError(f"{option}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise ConfigError(f"{option}: {path} is a folder; give a file name")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise ConfigError(f"{option}: {path} is not writable")


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
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Only the first N claims.")] = None,
    ids: Annotated[Optional[str], typer.Option("--ids", help="Only these claim ids (comma-separated).")] = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="Re-run only the claims that failed.")] = False,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Decision threshold (default 0.5; nli: a REFUTES count).")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps")] = None,
    docs_per_query: Annotated[Optional[int], typer.Option("--docs-per-query")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank")] = False,
    tools: Annotated[Optional[str], typer.Option("--tools")] = None,
    task: Annotated[Optional[str], typer.Option("--task", help="wikicollide (default), feverous (agent.task), or citations (WAFER-style records; --index names the sources index).")] = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    refresh_cache: RefreshOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Evaluate a system on WikiCollide (or FEVEROUS with --task feverous): predictions.jsonl, metrics.json, report.md."""
    if task not in (None, *TASK_NAMES, "citations"):
        raise ConfigError(f"unknown task '{task}'; allowed: {', '.join(TASK_NAMES)}, citations")
    if task == "citations":
        _eval_citations(dataset, out, limit=limit, ids=ids, retry_errors=retry_errors,
                        config=_eval_config(config_file, sets, model, base_url, no_cache, refresh_cache, None, None,
                                            concurrency, **{"cite.index": index, "cite.threshold": threshold}))
        return
    from claire.agent.runtime import open_system
    from claire.evals.dataset import load_wikicollide
    from claire.evals.metrics import resolve_threshold
    from claire.evals.reporting import auroc_text
    from claire.evals.runner import run_eval

    config = _eval_config(config_file, sets, model, base_url, no_cache, refresh_cache, index, system, concurrency,
                          **{"agent.max_steps": max_steps, "agent.docs_per_query": docs_per_query,
                             "retrieval.rerank": False if no_rerank else None, "agent.tools": tools, "agent.task": task})
    if threshold is not None or threshold_from is not None:
        # the systems decide their verdicts with it, and config.json records it for `claire metrics`
        value, _ = resolve_threshold(config.agent.system, threshold=threshold, threshold_from=threshold_from)
        config = config.with_overrides({"baselines.nli_threshold" if config.agent.system == "nli" else "agent.threshold": value})
    if config.agent.task == "feverous":
        from claire.evals.feverous import load_feverous_claims

        claims = load_feverous_claims(dataset)
    else:
        claims = load_wikicollide(dataset)
    if ids is not None:
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        if not wanted:
            raise ConfigError("--ids lists no claim ids; give them comma-separated, e.g. --ids 12,57")
        unknown = sorted(set(wanted) - {c.claim_id for c in claims})
        if unknown:
            raise ConfigError(f"--ids names claims not in {dataset}: {', '.join(unknown)}")
        claims = [c for c in claims if c.claim_id in set(wanted)]
    if limit is not None:
        claims = claims[:limit]
    from claire.agent.fact_limits import check_claims

    for warning in check_claims(claims, config.agent.max_fact_chars, source=str(dataset)):
        err.print(f"[yellow]warning:[/] {escape(warning)}")

    async def go():
        async with open_system(config) as system_:
            return await run_eval(claims, system_, out, concurrency=config.eval.concurrency, config_public=config.public_dict(),
                                  retry_errors=retry_errors, dataset=dataset, console=err)

    summary = run(go())
    metrics = summary.metrics
    console.print(f"[bold]{summary.system}[/] on {summary.total} claims ({summary.ran} run now, {summary.skipped} already done, "
                  f"{summary.errors} errors) in {summary.wall_time_s:.1f} s")
    if metrics.get("task") == "feverous":
        from claire.evals.reporting import pct

        console.print(f"label accuracy {pct(metrics['accuracy'])} · FEVEROUS score {pct(metrics['feverous_score'])} · evidence "
                      f"P {pct(metrics['evidence_precision'])} R {pct(metrics['evidence_recall'])} F1 {pct(metrics['evidence_f1'])} · {metrics['covers']}")
    else:
        console.print(f"AUROC {auroc_text(metrics)} · {metrics.get('covers', '')}")
    console.print(f"wrote {out}/predictions.jsonl, metrics.json, report.md" + (", roc.png" if (out / "roc.png").exists() else ""))
    if summary.total and summary.errors >= summary.total:
        err.print("[red]error:[/] no claim could be scored; see the error column of predictions.jsonl")
        raise typer.Exit(2)
    if summary.total and summary.errors / summary.total > config.eval.max_error_share:
        err.print(f"[red]error:[/] {summary.errors} of {summary.total} claims ended in an error "
                  f"(more than eval.max_error_share = {config.eval.max_error_share:.0%}); the metrics cover only the rest. "
                  "See the error column of predictions.jsonl, fix the cause and re-run with --retry-errors")
        raise typer.Exit(2)


def _eval_citations(dataset: Path, out: Path, *, limit: int | None, ids: str | None, retry_errors: bool, config: Config) -> None:
    """`claire eval --task citations`: Side's measures on WAFER-style records (evals/citations.py)."""
    from claire.agent.citation import open_checker
    from claire.evals.citations import describe_run, load_citations, run_citation_eval, select_records

    records = select_records(load_citations(dataset), ids=ids, limit=limit, dataset=dataset)

    async def go():
        async with open_checker(config) as checker:
            return await run_citation_eval(records, checker, out, dataset=dataset, concurrency=config.eval.concurrency,
                                           config_public=config.public_dict(), retry_errors=retry_errors, console=err)

    summary = run(go())
    for line in describe_run(summary):
        console.print(line, highlight=False)
    if summary.total and summary.errors >= summary.total:
        err.print("[red]error:[/] no record could be scored; see the error column of predictions.jsonl")
        raise typer.Exit(2)


@app.command("metrics")
def metrics_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `claire eval`.")],
    threshold: Annotated[Optional[float], typer.Option("--threshold")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    split: Annotated[Optional[str], typer.Option("--split", help="validation or test (default: from the dataset name).")] = None,
) -> None:
    """Recompute metrics, report and ROC plot from a run's predictions alone."""
    from claire.evals.predictions import read_run_config
    from claire.evals.reporting import compare_runs
    from claire.evals.runner import score_run

    stored = read_run_config(run_dir) or {}
    if stored.get("task") == "citations":
        from claire.evals.citations import score_citation_run

        cite = (stored.get("config") or {}).get("cite") or {}
        score_citation_run(run_dir, threshold=threshold if threshold is not None else cite.get("threshold", 0.5))
        console.print(f"rewrote {run_dir}/metrics.json, report.md and the plots")
        return

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
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Only the first N claims.")] = None,
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


# -- citations -------------------------------------------------------------------------------
@app.command("cite")
def cite_command(
    claim: Annotated[str, typer.Argument(help="The claim that carries the citation.")],
    source: Annotated[Optional[Path], typer.Option("--source", help="The cited source as a text file.")] = None,
    source_text: Annotated[Optional[str], typer.Option("--source-text", help="The cited source's text.")] = None,
    source_url: Annotated[Optional[str], typer.Option("--source-url", help="The cited source's URL (so the index's copy of it is not suggested).")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="The claim's Wikipedia article.")] = None,
    section: Annotated[Optional[str], typer.Option("--section", help="The claim's section.")] = None,
    context: Annotated[Optional[str], typer.Option("--context", help="The text around the claim.")] = None,
    expand: Annotated[Optional[bool], typer.Option("--expand/--no-expand", help="Let the LLM write extra search queries (cite.expand_queries).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print {original, suggestions, verdict, ...} as JSON.")] = False,
    index: Annotated[Optional[str], typer.Option("--index", help="The sources index (cite.index; default: the bundled example sources).")] = None,
    path: PathOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Does the cited source support the claim, and which indexed source would? Exit 0 supported, 1 not, 2 error."""
    from claire.agent.citation import Citation, CitedSource, open_checker
    from claire.indexes.web_docs import check_source_text, read_source_text

    if not claim.strip():
        raise ConfigError("the claim is empty: give the sentence that carries the citation")
    if (source is None) == (source_text is None):
        raise ConfigError("give the cited source with either --source FILE or --source-text TEXT")
    config = resolve(config_file, sets, **common(model, base_url, no_cache, False, None, path, url),
                     **{"cite.index": index, "cite.expand_queries": expand})
    limit = config.cite.max_source_bytes
    text = read_source_text(source, max_bytes=limit) if source else check_source_text(source_text or "", "--source-text", max_bytes=limit)
    citation = Citation(claim=claim.strip(), title=title or "", section=section or "", context=(context or "").strip(),
                        source=CitedSource(text=text, title=source.stem.replace("_", " ") if source else "", url=source_url))

    async def go():
        async with open_checker(config) as checker:
            return await checker.check(citation)

    if as_json:
        result = run(go())
        print(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        from claire.views import citation_view

        with err.status("checking the citation…"):
            result = run(go())
        console.print(citation_view(result))
    if result.verdict is None:
        raise typer.Exit(2)
    raise typer.Exit(0 if result.verdict == "supported" else 1)


# -- rates: estimates, audits, review ----------------------------------------------------------
@app.command("estimate")
def estimate_command(
    sample_size: Annotated[bool, typer.Option("--sample-size", help="Print Cochran's sample size for --confidence, --margin, --p.")] = False,
    confirmed: Annotated[Optional[int], typer.Option("--confirmed", help="Facts confirmed inconsistent (with --total): print the rate.")] = None,
    total: Annotated[Optional[int], typer.Option("--total", help="Facts checked (with --confirmed).")] = None,
    index: IndexOpt = None,
    sample: Annotated[Optional[int], typer.Option("--sample", help="Facts to check (with --index).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the sample.")] = 0,
    blocks: Annotated[Optional[int], typer.Option("--blocks", help="Blocks (or articles) to draw before sampling facts (default: --sample).")] = None,
    unit: Annotated[str, typer.Option("--unit", help="Draw blocks (default) or whole articles.")] = "block",
    out: Annotated[Optional[Path], typer.Option("--out", help="Run directory (re-running resumes it).")] = None,
    from_dir: Annotated[Optional[Path], typer.Option("--from", help="Recompute an estimate or audit from its files and decisions.")] = None,
    decisions: Annotated[Optional[list[Path]], typer.Option("--decisions", help="More decisions (reviews JSONL, e.g. exported by the web app); repeatable.")] = None,
    confidence: Annotated[Optional[float], typer.Option("--confidence", help="Confidence level (default 0.99).")] = None,
    margin: Annotated[float, typer.Option("--margin", help="Margin of error for --sample-size.")] = 0.05,
    p: Annotated[float, typer.Option("--p", help="Expected proportion for --sample-size.")] = 0.5,
    population: Annotated[Optional[int], typer.Option("--population", help="Finite population size (correction).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    concurrency: ConcurrencyOpt = None,
    path: PathOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """How inconsistent is a corpus: sample sizes, rates with intervals, and sampled estimates."""
    from claire.workflows.estimation import cochran_sample_size, estimate_rate

    modes = [sample_size, confirmed is not None or total is not None, index is not None or sample is not None or out is not None,
             from_dir is not None]
    if sum(modes) != 1:
        raise ConfigError("choose one: --sample-size, --confirmed K --total N, --index NAME --sample K --out DIR, or --from DIR")
    level = 0.99 if confidence is None else confidence
    if sample_size:
        n = cochran_sample_size(level, margin, p, population)
        if as_json:
            print(json.dumps({"sample_size": n, "confidence": level, "margin": margin, "p": p, "population": population}))
        else:
            console.print(f"sample size: [bold]{n}[/] facts (confidence {level:g}, margin ±{margin:g}, p {p:g}"
                          + (f", population {population:,}" if population else "") + ")")
        return
    if modes[1]:
        if confirmed is None or total is None:
            raise ConfigError("give both --confirmed K and --total N")
        rate = estimate_rate(confirmed, total, level, population)
        if as_json:
            print(json.dumps({**rate.model_dump(), "text": rate.paper_form(), "wilson_text": rate.wilson_form()}))
        else:
            console.print(f"{confirmed} of {total} at {level * 100:g}%: [bold]{rate.paper_form()}[/] (normal approximation); "
                          f"Wilson {rate.wilson_form()}")
        return
    if from_dir is not None:
        from claire.workflows.rates import summarise

        summary = summarise(from_dir, confidence=confidence, decision_files=decisions or [])
    else:
        from claire.workflows.estimate import run_estimate

        if index is None or sample is None or out is None:
            raise ConfigError("an estimate needs --index NAME, --sample K and --out DIR")
        if unit not in ("block", "article"):
            raise ConfigError(f"--unit must be block or article, got {unit!r}")
        config = _eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency)
        config = config.with_overrides({"retrieval.path": str(path)}) if path else config
        summary = run(run_estimate(config=config, sample=sample, seed=seed, out_dir=out, units=blocks, unit=unit,  # type: ignore[arg-type]
                                   confidence=level, decision_files=decisions or [], console=err))
        from_dir = out
    _print_rates(summary, from_dir, as_json)


def _print_rates(summary: dict[str, Any], out: Path, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    flagged, confirmed = summary["flagged_rate"], summary["confirmed_rate"]
    console.print(f"{summary['checked']} facts checked, {summary['flagged']} flagged, {summary['reviewed']} reviewed, "
                  f"{summary['confirmed']} confirmed")
    if flagged:
        console.print(f"flagged:   [bold]{flagged['text']}[/]  (Wilson {flagged['wilson_text']})")
    if confirmed:
        bound = " — a lower bound until every flag is reviewed" if summary["confirmed_rate_is_lower_bound"] else ""
        console.print(f"confirmed: [bold]{confirmed['text']}[/]  (Wilson {confirmed['wilson_text']}){bound}")
    extra = summary.get("extrapolation")
    if extra:
        item = extra["confirmed"] or extra["flagged"]
        which = "confirmed" if extra["confirmed"] else "flagged"
        console.print(f"corpus: ≈{item['corpus_facts']:,.0f} facts ({item['facts_per_unit']:.2f} per block), "
                      f"≈{item['inconsistent']:,.0f} {which} inconsistent")
    console.print(f"wrote {out}/{summary['kind']}.json and {summary['kind']}.md")


@app.command("audit")
def audit_command(
    dataset: Annotated[Path, typer.Option("--dataset", help="The benchmark file in its published format.")],
    fmt: Annotated[str, typer.Option("--format", help="feverous (JSONL), ambigqa (JSON) or wikicollide.")],
    out: Annotated[Path, typer.Option("--out", help="Run directory (re-running resumes it).")],
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N claims.")] = None,
    confidence: Annotated[float, typer.Option("--confidence")] = 0.99,
    decisions: Annotated[Optional[list[Path]], typer.Option("--decisions", help="More decisions (reviews JSONL); repeatable.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    concurrency: ConcurrencyOpt = None,
    index: IndexOpt = None,
    path: PathOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Check the claims a benchmark takes as true against the corpus; the share contradicted."""
    from claire.workflows.audit import run_audit

    config = _eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency)
    config = config.with_overrides({"retrieval.path": str(path)}) if path else config
    summary = run(run_audit(dataset=dataset, fmt=fmt, config=config, out_dir=out, limit=limit, confidence=confidence,
                            decision_files=decisions or [], console=err))
    _print_rates(summary, out, as_json)


@app.command("review")
def review_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (estimate, audit, scan or eval).")],
    reviewer: Annotated[Optional[str], typer.Option("--reviewer", help="Your name, stored with each decision.")] = None,
) -> None:
    """Accept or reject each flagged fact in the terminal (resumable; decisions in DIR/reviews.jsonl)."""
    from claire.review import review_run

    result = review_run(run_dir, console, reviewer=reviewer)
    console.print(f"{result.accepted} accepted, {result.rejected} rejected, {result.skipped} skipped this session")
    if result.summary is not None:
        _print_rates(result.summary, run_dir, False)


# -- web app ---------------------------------------------------------------------------------
@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (a non-loopback one needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8000,
    token: Annotated[Optional[str], typer.Option("--token", envvar="CLAIRE_SERVE_TOKEN", help="Require 'Authorization: Bearer TOKEN' on every API call.")] = None,
    concurrency: ConcurrencyOpt = None,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Where jobs and reviews are kept (default: web/ in the user data folder).")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option("--cors-origin", help="Another page origin allowed to call the API (repeatable).")] = None,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body in bytes.")] = 1_000_000,
    system: Annotated[Optional[str], typer.Option("--system", help="claire (default), rav or nli.")] = None,
    index: IndexOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """The web app and REST API for editors: paste an article, see flagged facts, review them."""
    from claire.web.app import ServeSettings
    from claire.web.serve import serve

    config = _eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency)
    settings = ServeSettings(host=host, port=port, token=token or None, concurrency=config.eval.concurrency,
                             data_dir=data_dir, cors_origins=cors_origin or [], max_body_bytes=max_body)
    serve(config, settings, console=err)


# -- benchmarks ------------------------------------------------------------------------------
@bench_app.command("llm")
def bench_llm(calls: Annotated[int, typer.Option("--calls")] = 300) -> None:
    """LLM-layer overhead per call, concurrency speed-up and cache-hit latency (local mock server)."""
    from claire.bench.llm import run_llm_bench

    run_llm_bench(calls=calls, console=console)


@bench_app.command("prompts")
def bench_prompts(
    dataset: Annotated[Path, typer.Option("--dataset", help="WikiCollide claims (JSON)")],
    corpus: Annotated[Path, typer.Option("--corpus", help="the blocks to search (JSONL), indexed for the run")],
    window: Annotated[int, typer.Option("--window", help="the small model's context window")] = 8192,
) -> None:
    """Prompt tokens per claim before and after the context budget (local mock server)."""
    from claire.bench.prompts import run_prompt_bench

    run_prompt_bench(dataset, corpus, window=window, console=console)


@bench_app.command("retrieval")
def bench_retrieval(
    n: Annotated[int, typer.Option("--n", min=1, help="Synthetic blocks for the embedded engine.")] = 100_000,
    queries: Annotated[int, typer.Option("--queries")] = 200,
    baseline_n: Annotated[Optional[int], typer.Option("--baseline-n", help="Blocks for the qdrant-client local-mode baseline.")] = None,
) -> None:
    """Upsert rate, HNSW build, size and query latency: embedded engine vs qdrant-client local mode."""
    from claire.bench.retrieval import run_retrieval_bench

    run_retrieval_bench(n, queries=queries, baseline_n=baseline_n, console=console)


@bench_app.command("retrieval-quality")
def bench_retrieval_quality(
    dataset: DatasetOpt,
    k: Annotated[int, typer.Option("-k", min=1)] = 15,
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
    claims: Annotated[int, typer.Option("--claims", min=1)] = 48,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    system: Annotated[str, typer.Option("--system", help="tiny (a 3-call stand-in), or the real claire / rav on the demo index.")] = "tiny",
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs at each concurrency above 1; the median is reported.")] = 3,
) -> None:
    """Batch-eval throughput at concurrency 1 and 16 vs the ideal, and a warm-cache re-run."""
    from claire.bench.eval import run_eval_bench

    run_eval_bench(claims=claims, latency=latency, system=system, repeat=repeat, console=console)


@bench_app.command("serve")
def bench_serve(
    facts: Annotated[int, typer.Option("--facts", help="Facts in the scanned article.")] = 40,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Facts checked at once.")] = 8,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    clients: Annotated[int, typer.Option("--clients", help="Concurrent clients polling the scan status.")] = 100,
    polls: Annotated[int, typer.Option("--polls", help="Status polls per client.")] = 20,
) -> None:
    """Web app: time to the first highlighted fact and to a finished scan, and status-poll latency under load."""
    from claire.bench.serve import run_serve_bench

    run_serve_bench(facts=facts, concurrency=concurrency, latency=latency, clients=clients, polls=polls, console=console)


def _show_config_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, ConfigWarning):
        err.print(f"[yellow]warning:[/] {escape(redact(str(message)))}", highlight=False)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def main() -> None:
    """Console-script entry point: clear messages instead of tracebacks."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.showwarning = _show_config_warning
    try:
        app()
    except ClaireError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)  # str() is redacted
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as error:  # a bug: one line for the person, the traceback on request
        if os.environ.get("CLAIRE_DEBUG"):
            raise
        err.print(f"[bold red]internal error:[/] {escape(redact(f'{type(error).__name__}: {error}'))} "
                  "(set CLAIRE_DEBUG=1 for the traceback, and please report it)", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
