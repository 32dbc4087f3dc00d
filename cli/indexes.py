"""``claire index ...`` and ``claire search``: building, updating, listing and searching indexes."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markup import escape

from claire.cli.options import JsonOpt, Settings, console, err, passage_text, run, with_settings
from claire.errors import ConfigError

if TYPE_CHECKING:
    from claire.config import Config


@with_settings("path", "url", "config_file", "sets")
def index_build(
    corpus: Annotated[Optional[Path], typer.Argument(help="Corpus JSONL (one block per line).")] = None,
    name: Annotated[str, typer.Option("--name", help="Index name.")] = ...,
    embedder: Annotated[str, typer.Option("--embedder", help="minilm (offline default), e5-small (multilingual, offline), multilingual-e5 or mgte (from the hub), or a sentence-transformers id/path.")] = "minilm",
    from_wikicollide: Annotated[Optional[Path], typer.Option("--from-wikicollide", help="Build from a WikiCollide dataset's passages.")] = None,
    from_article: Annotated[Optional[list[Path]], typer.Option("--from-article", help="Plain article text (## headings start sections); repeatable. The file name is the title.")] = None,
    from_feverous_pages: Annotated[Optional[Path], typer.Option("--from-feverous-pages", help="FEVEROUS wiki pages (JSONL, one page a line); blocks keep element ids.")] = None,
    from_web_docs: Annotated[Optional[Path], typer.Option("--from-web-docs", help="Web documents (JSONL: url, title, text), split into passages: a sources index for `claire cite`.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip bad corpus lines (counted) instead of stopping.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Rebuild an existing index of that name.")] = False,
    from_dump: Annotated[Optional[Path], typer.Option("--from-dump", help="A Wikipedia dump: MediaWiki XML (.xml, .xml.bz2) or Enterprise HTML (.ndjson, .json.gz, .tar.gz). Re-run to resume.")] = None,
    limit_pages: Annotated[Optional[int], typer.Option("--limit-pages", help="Dump builds: stop after N pages (for trials).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Dump builds: parsing processes (default: cores - 1 on a GPU; on a CPU cores/4, none on 2 cores; 0 parses inline).")] = None,
    device: Annotated[str, typer.Option("--device", help="Dump builds: encode on cuda (fp16), cpu, or auto.")] = "auto",
    encode_processes: Annotated[int, typer.Option("--encode-processes", help="Dump builds on CPU: encoding processes.")] = 1,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", min=1, help="Dump builds: passages per encode batch (default 1024 on a GPU, 256 on a CPU).")] = None,
    edition: Annotated[Optional[str], typer.Option("--edition", help="Dump builds: the edition's language code when the dump does not name it (an XML dump's <dbname>, Enterprise's in_language).")] = None,
    langlinks: Annotated[Optional[Path], typer.Option("--langlinks", help="Dump builds: the edition's langlinks table dump ({wiki}-latest-langlinks.sql.gz): each article's counterparts in other editions.")] = None,
    link_languages: Annotated[Optional[str], typer.Option("--link-languages", help="Dump builds with --langlinks: keep the links to these editions only, e.g. en,fr (default: all).")] = None,
    *,
    settings: Settings,
) -> None:
    """Embed a corpus into a named index (embedded Qdrant engine, or a Qdrant server with --url)."""
    from claire.indexes.corpus import MAX_BLOCK_CHARS, blocks_from_article, blocks_from_wikicollide, read_corpus, wikicollide_claims
    from claire.indexes.retriever import build_index

    config = settings.resolve()
    claims_of: dict[str, Any] = {}
    if sum(source is not None for source in (corpus, from_wikicollide, from_article, from_feverous_pages, from_web_docs, from_dump)) != 1:
        raise ConfigError("give one source: a CORPUS.jsonl, --from-wikicollide DATASET.json, --from-article FILE, "
                          "--from-feverous-pages PAGES.jsonl, --from-web-docs FILE.jsonl or --from-dump DUMP")
    if from_dump is not None:
        from claire.ingestion.dump_build import build_from_dump

        summary = build_from_dump(from_dump, name=name, root=config.retrieval.index_root(), url=config.retrieval.url,
                                  api_key=_qdrant_key(config), embedder=embedder, replace=replace,
                                  options=_ingest_options(config, limit_pages, workers, device, encode_processes, batch_size,
                                                          edition, langlinks, link_languages))
        _print_ingest(summary)
        return
    if from_feverous_pages is not None:
        from claire.ingestion.feverous_pages import blocks_from_feverous_pages

        blocks, invalid = blocks_from_feverous_pages(from_feverous_pages), 0
    elif from_web_docs is not None:
        from claire.ingestion.web_docs import read_web_docs

        loaded = read_web_docs(from_web_docs, skip_invalid=skip_invalid, max_words=config.cite.passage_words)
        blocks, invalid = loaded.blocks, loaded.invalid
        for message in loaded.errors[:10]:
            err.print(f"[yellow]skipped[/] {escape(message)}")
    elif from_article:
        blocks, invalid = [], 0
        for article in from_article:
            blocks += blocks_from_article(article.stem.replace("_", " "), passage_text(None, article))
    elif from_wikicollide is not None:
        blocks, invalid = blocks_from_wikicollide(from_wikicollide), 0
        claims_of = {"claims_of": from_wikicollide.name,
                     "claim_ids": [claim.claim_id for claim in wikicollide_claims(from_wikicollide)]}
    else:
        from claire.indexes.corpus import linked_both_ways

        loaded = read_corpus(corpus, skip_invalid=skip_invalid)
        blocks, invalid = linked_both_ways(loaded.blocks, config.retrieval.language), loaded.invalid  # editions' links both ways
        for message in loaded.errors[:10]:
            err.print(f"[yellow]skipped[/] {escape(message)}")
    summary = build_index(
        blocks, name=name, embedder=embedder, root=config.retrieval.index_root(), url=config.retrieval.url,
        api_key=_qdrant_key(config), replace=replace, lock_timeout=config.retrieval.lock_timeout, **claims_of,
    )
    size = f"{summary.size_on_disk / 1e6:.1f} MB" if summary.size_on_disk else "n/a (server)"
    console.print(
        f"[green]built[/] index [bold]{summary.name}[/]: {summary.blocks} blocks from {summary.documents} articles "
        f"in {summary.seconds:.1f} s ({summary.blocks_per_s:.0f} blocks/s), {size} on disk"
        + (f"; {invalid} invalid lines skipped" if invalid else "")
        + (f"; {summary.split} blocks over {MAX_BLOCK_CHARS:,} characters split into parts" if summary.split else "")
    )


def _ingest_options(config: "Config", limit_pages, workers, device, encode_processes, batch_size,  # noqa: ANN202
                    edition=None, langlinks=None, link_languages=None):  # noqa: ANN001
    from claire.ingestion.dump_build import IngestOptions, default_batch_size, default_workers
    from claire.ingestion.langlinks import read_langlinks
    from claire.indexes.server_store import ServerOptions
    from claire.languages import checked_code, language_list

    r = config.retrieval
    if limit_pages is not None and limit_pages < 1:
        raise ConfigError(f"--limit-pages must be at least 1 (got {limit_pages})")
    return IngestOptions(
        workers=default_workers(device) if workers is None else workers,
        batch_size=default_batch_size(device) if batch_size is None else batch_size,
        limit_pages=limit_pages, device=device, encode_processes=encode_processes,
        server=ServerOptions(shards=r.server_shards, on_disk=r.server_on_disk, int8=r.server_int8,
                             upload_parallel=r.upload_parallel),
        int8=r.edge_int8,
        language=_code_option(checked_code, edition, "--edition"),
        langlinks=read_langlinks(langlinks, _code_option(language_list, link_languages, "--link-languages"))
        if langlinks else None,
    )


def _code_option(read, value, option: str):  # noqa: ANN001, ANN202
    """A language option read by ``read`` (None when not given); a bad code is a ConfigError naming the option."""
    if not value:
        return None
    try:
        return read(value)
    except ValueError as error:
        raise ConfigError(f"{option}: {error}") from None


def _print_ingest(summary) -> None:  # noqa: ANN001
    from claire.ingestion.dump_build import skip_counts_line

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


def _qdrant_key(config: "Config") -> str | None:
    key = config.retrieval.qdrant_api_key
    return key.get_secret_value() if key else None


@with_settings("config_file", "sets")
def index_export(
    from_dump: Annotated[Path, typer.Argument(help="A Wikipedia dump (the formats of index build --from-dump).")],
    out: Annotated[Path, typer.Option("--out", help="The corpus JSONL to write.")] = ...,
    edition: Annotated[Optional[str], typer.Option("--edition", help="The edition's language code when the dump does not name it.")] = None,
    langlinks: Annotated[Optional[Path], typer.Option("--langlinks", help="The edition's langlinks table dump ({wiki}-latest-langlinks.sql.gz).")] = None,
    link_languages: Annotated[Optional[str], typer.Option("--link-languages", help="With --langlinks: keep the links to these editions only, e.g. en,fr.")] = None,
    langlinks_api: Annotated[Optional[str], typer.Option("--langlinks-api", help="Ask this wiki's Action API for the counterparts instead (prop=langlinks), e.g. https://de.wikipedia.org/w/api.php.")] = None,
    limit_pages: Annotated[Optional[int], typer.Option("--limit-pages", help="Stop after N pages.")] = None,
    *,
    settings: Settings,
) -> None:
    """Write a dump's articles as corpus JSONL (blocks with their language and counterparts), to
    build one index of several editions: export each, then `claire index build` them together."""
    from claire.ingestion.dump_build import export_corpus

    from claire.languages import language_list

    if langlinks is not None and langlinks_api:
        raise ConfigError("give --langlinks (the table dump) or --langlinks-api (the Action API), not both")
    config = settings.resolve()
    options = _ingest_options(config, limit_pages, 0, "cpu", 1, 1, edition, langlinks, link_languages)
    pages, blocks = export_corpus(from_dump, out, options, langlinks_api=langlinks_api,
                                  link_languages=_code_option(language_list, link_languages, "--link-languages"))
    console.print(f"{pages:,} pages read, {blocks:,} blocks written to {escape(str(out))}")


@with_settings("path", "url", "config_file", "sets")
def index_update(
    name: Annotated[str, typer.Argument(help="The index to update (built with --from-dump).")],
    from_dump: Annotated[Path, typer.Option("--from-dump", help="The newer dump (same formats as build).")] = ...,
    limit_pages: Annotated[Optional[int], typer.Option("--limit-pages", help="Stop after N pages (no deletions then).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Parsing processes (default as for index build).")] = None,
    device: Annotated[str, typer.Option("--device", help="Encode on cuda (fp16), cpu, or auto.")] = "auto",
    encode_processes: Annotated[int, typer.Option("--encode-processes", help="Encoding processes on CPU.")] = 1,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", min=1, help="Passages per encode batch (default 1024 on a GPU, 256 on a CPU).")] = None,
    *,
    settings: Settings,
) -> None:
    """Re-index pages whose revision changed in a newer dump, add new ones, delete vanished ones."""
    from claire.ingestion.dump_build import update_from_dump

    config = settings.resolve()
    summary = update_from_dump(from_dump, name=name, root=config.retrieval.index_root(), url=config.retrieval.url,
                               api_key=_qdrant_key(config),
                               options=_ingest_options(config, limit_pages, workers, device, encode_processes, batch_size))
    _print_ingest(summary)


@with_settings("path", "url", "config_file", "sets")
def index_list(*, settings: Settings) -> None:
    """List the indexes (embedded ones under the index folder, or on the Qdrant server)."""
    from rich.table import Table

    from claire.indexes.catalog import list_indexes

    config = settings.resolve()
    metas = list_indexes(config.retrieval.index_root(), config.retrieval.url, api_key=_qdrant_key(config))
    if not metas:
        where = config.retrieval.url or config.retrieval.index_root()
        console.print(f"no indexes at {where} (the demo index is built on first use of `claire search` or `claire check`)")
        return
    table = Table("name", "blocks", "articles", "embedder", "dim", "created")
    for meta in metas:
        table.add_row(meta.name, str(meta.blocks), str(meta.documents), meta.embedder, str(meta.dim), str(meta.created_at)[:19])
    console.print(table)


@with_settings("path", "url", "config_file", "sets")
def index_info(name: Annotated[str, typer.Argument()], *, settings: Settings) -> None:
    """Show what an index records: embedder, corpus stats, build time, size."""
    from claire.indexes.catalog import list_indexes

    config = settings.resolve()
    metas = {m.name: m for m in list_indexes(config.retrieval.index_root(), config.retrieval.url, api_key=_qdrant_key(config))}
    if name not in metas:
        raise ConfigError(f"unknown index '{name}'; available: {', '.join(metas) or 'none'}")
    for key, value in metas[name].to_dict().items():
        console.print(f"[bold]{key}[/]: {value}")


@with_settings("index", "languages", "language", "path", "url", "model", "base_url", "config_file", "sets")
def search_command(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    k: Annotated[int, typer.Option("-k", min=1, help="Number of results.")] = 10,
    exclude_title: Annotated[Optional[str], typer.Option("--exclude-title", help="Leave out this article.")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Rerank with RankGPT through the LLM (search never reranks otherwise).")] = False,
    mode: Annotated[Optional[str], typer.Option("--mode", help="dense, hybrid or bm25 (default: retrieval.mode, dense as in the paper).")] = None,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """Search an index and print the ranked blocks."""
    from claire.agent.runtime import open_retrieval, prompt_library, search_engine
    from claire.llm.client import ChatClient

    if not query.strip():
        raise ConfigError("the query is empty")
    config = settings.resolve(
                     **{"retrieval.rerank": rerank, "retrieval.mode": mode})

    async def go() -> list[Any]:
        llm = ChatClient.from_config(config.llm) if config.retrieval.rerank else None
        retriever = open_retrieval(config)
        try:
            engine = search_engine(config, retriever, llm, prompt_library(config))
            return await engine.search(query, exclude_title=exclude_title, k=k)
        finally:
            retriever.close()
            if llm:
                await llm.aclose()

    hits = run(go())
    if as_json:
        print(json.dumps([{"rank": h.rank, "score": h.score, **h.block.model_dump()} for h in hits], indent=2, ensure_ascii=False))
        return
    from claire.cli.views import hits_table

    console.print(hits_table(hits, query))
