"""``claire extract``, ``scan`` and ``cite``: the facts of a passage, and the sources of a claim."""

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from claire.cli.options import (
    ConcurrencyOpt, FactContextOpt, FactSectionOpt, FactTitleOpt, FileOpt, JsonOpt, PassageTitleOpt, SectionOpt, Settings, SystemOpt, TextOpt, console, err, passage_text, require_api_key,
    run, with_settings,
)
from claire.errors import ConfigError, ExitCode


@with_settings("language", "model", "base_url", "no_cache", "config_file", "sets")
def extract_command(
    title: PassageTitleOpt,
    section: SectionOpt = "",
    text: TextOpt = None,
    file: FileOpt = None,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """Split a passage into atomic, self-contained facts. Exit 0, or 3 when it holds no checkable fact."""
    passage = passage_text(text, file)
    config = settings.resolve()
    require_api_key(config)
    from claire.agent.extraction import extract_facts
    from claire.agent.runtime import prompt_library
    from claire.jobs.scan import passage_language
    from claire.llm.client import ChatClient

    async def go():
        llm = ChatClient.from_config(config.llm)
        try:
            return await extract_facts(title=title, section=section, text=passage, llm=llm, prompts=prompt_library(config),
                                       language=passage_language(config))
        finally:
            await llm.aclose()

    facts = run(go())
    if as_json:
        print(json.dumps([{"fact": f.text, "block": f.block} for f in facts], indent=2, ensure_ascii=False))
        return
    if not facts:
        err.print("no checkable facts were found in the text")
        raise typer.Exit(ExitCode.NOTHING_TO_CHECK)
    for number, fact in enumerate(facts, start=1):
        console.print(f"{number:>3}. {fact.text}")


@with_settings("index", "languages", "language", "preset", "model", "base_url", "no_cache", "config_file", "sets")
def scan_command(
    title: PassageTitleOpt,
    section: SectionOpt = "",
    text: TextOpt = None,
    file: FileOpt = None,
    system: SystemOpt = None,
    max_facts: Annotated[Optional[int], typer.Option("--max-facts", min=1, help="Check at most N facts.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Run directory (default out/scan-TITLE).")] = None,
    concurrency: ConcurrencyOpt = None,
    *,
    settings: Settings,
) -> None:
    """Extract every fact of a passage and check each one; flagged facts first. Exit 0 none flagged, 1 some flagged, 2 some could not be checked (none flagged), 3 no checkable fact."""
    passage = passage_text(text, file)
    config = settings.batch(system, concurrency)
    require_api_key(config)  # before the index, the embedder and the models load
    from rich.table import Table

    from claire.jobs.scan import run_scan

    result = run(run_scan(title=title, section=section, text=passage, config=config, out_dir=out,
                          max_facts=max_facts, console=err))
    table = Table(title=f"facts of {title}, most suspicious first", title_justify="left", expand=True)
    table.add_column("score", justify="right", width=6)
    table.add_column("verdict", width=13)
    table.add_column("fact", ratio=3)
    table.add_column("key evidence", ratio=1)
    for row in result.rows:
        style = {"flagged": "bold red", "failed": "yellow"}.get(row.outcome, "")
        table.add_row("—" if row.score is None or row.outcome == "failed" else f"{row.score:.2f}",
                      row.verdict if row.outcome != "failed" else "failed", row.fact, row.key_evidence or "—", style=style)
    console.print(table)
    failed = f" ({len(result.failed)} could not be checked: run the same command again to retry them)" if result.failed else ""
    console.print(f"{len(result.flagged)} of {len(result.rows)} fact{'' if len(result.rows) == 1 else 's'} flagged{failed}; report: {result.out_dir}/scan.md")
    raise typer.Exit(ExitCode.FLAGGED if result.flagged else ExitCode.ERROR if result.failed else ExitCode.OK)


@with_settings("path", "url", "model", "base_url", "no_cache", "config_file", "sets")
def cite_command(
    claim: Annotated[str, typer.Argument(help="The claim that carries the citation.")],
    source: Annotated[Optional[Path], typer.Option("--source", help="The cited source as a text file.")] = None,
    source_text: Annotated[Optional[str], typer.Option("--source-text", help="The cited source's text.")] = None,
    source_url: Annotated[Optional[str], typer.Option("--source-url", help="The cited source's URL (so the index's copy of it is not suggested).")] = None,
    title: FactTitleOpt = None,
    section: FactSectionOpt = None,
    context: FactContextOpt = None,
    expand: Annotated[Optional[bool], typer.Option("--expand/--no-expand", help="Let the LLM write extra search queries (cite.expand_queries).")] = None,
    as_json: JsonOpt = False,
    index: Annotated[Optional[str], typer.Option("--index", help="The sources index (cite.index; default: the bundled example sources).")] = None,
    *,
    settings: Settings,
) -> None:
    """Does the cited source support the claim, and which indexed source would? Exit 0 supported, 1 not (or a better source found), 2 error."""
    if not claim.strip():
        raise ConfigError("the claim is empty: give the sentence that carries the citation")
    if (source is None) == (source_text is None):
        raise ConfigError("give the cited source with either --source FILE or --source-text TEXT")
    config = settings.resolve(
                     **{"cite.index": index, "cite.expand_queries": expand, "agent.task": "citations",
                        "agent.system": "cite"})
    require_api_key(config)
    from claire.agent.runtime import open_system
    from claire.ingestion.web_docs import check_source_text, read_source_text
    from claire.tasks.citations.records import Citation, CitedSource

    limit = config.cite.max_source_bytes
    text = read_source_text(source, max_bytes=limit) if source else check_source_text(source_text or "", "--source-text", max_bytes=limit)
    citation = Citation(claim=claim.strip(), title=title or "", section=section or "", context=(context or "").strip(),
                        source=CitedSource(text=text, title=source.stem.replace("_", " ") if source else "", url=source_url))

    async def go():
        from claire.runs.executor import Executor

        async with open_system(config) as checker:
            return (await Executor.for_config(config, 1).check(checker, citation, key="cite")).answer()

    if as_json:
        result = run(go())
        print(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        from claire.cli.views import citation_view

        with err.status("checking the citation…"):
            result = run(go())
        console.print(citation_view(result))
    if result.verdict is None:
        raise typer.Exit(ExitCode.ERROR)
    raise typer.Exit(ExitCode.OK if result.verdict == "supported" else ExitCode.FLAGGED)
