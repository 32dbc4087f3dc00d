"""``claire resolve``: which side of a contradiction is right — for a fact (checked first, then
resolved when flagged), a case of a sides file, or a flagged record of a run — shown as a card
(each side's article, its sources with their tier and what they say, the decision and its
reasons, what is missing) with the talk-page draft; ``claire check --resolve`` runs the same
after a flagged check. The card's view is :func:`resolution_view`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from claire.cli.options import (
    FactContextOpt, FactSectionOpt, FactTitleOpt, JsonOpt, Settings, SystemOpt, check_writable, console, err, require_api_key,
    run, with_settings,
)
from claire.errors import ConfigError, DatasetError, ExitCode

if TYPE_CHECKING:
    from claire.config import Config
    from claire.domain import Assessment, Claim
    from claire.tasks.sides.records import Resolution, SidesCase

_DECISION_STYLE = {"fact": "bold green", "passage": "bold green", "both": "bold cyan", "unknown": "bold yellow"}
_SUPPORT_MARK = {"states": ("✓", "green"), "contradicts": ("✗", "red"), "silent": ("–", "yellow"),
                 "could not read": ("?", "magenta"), "unknown": ("?", "dim")}


# -- the card -------------------------------------------------------------------------------------
def resolution_view(resolution: Resolution) -> Group:
    """The card: the decision, each side, the reasons and what is missing."""
    from claire.languages import name_of
    from claire.tasks.sides.records import DECISION_WORDS

    if resolution.decision is None:
        return Group(Text(f"no decision: {resolution.error or 'the resolve failed'}", style="red"))
    confidence = "" if resolution.decision == "unknown" else f"  (confidence {resolution.confidence:.2f})"
    parts: list[Any] = [Text.assemble(("Which side is right? ", "bold"),
                                      (DECISION_WORDS[resolution.decision], _DECISION_STYLE[resolution.decision]),
                                      confidence)]
    for side in resolution.sides:
        lines: list[Any] = [Text.assemble(("“", "dim"), side.text, ("”", "dim"), ("   value: ", "dim"), side.value or "—")]
        if side.translation:  # the other edition's sentence, as written above, and the model's translation
            lines.append(Text.assemble((f"translation into {name_of(side.translated_into)} (by the model): ", "dim"),
                                       ("“", "dim"), side.translation, ("”", "dim")))
        if side.link:
            lines.append(Text(side.link, style="dim"))
        if not side.sources:
            lines.append(Text("cites no source", style="yellow"))
        for source in side.sources:
            mark, style = _SUPPORT_MARK.get(source.support, ("?", "dim"))
            reference = source.reference
            name = reference.title or reference.url or "untitled source"
            lines.append(Text.assemble((f"{mark} {source.support_words:<24}", style), (name, "bold"),
                                       f" — {reference.site}" if reference.site else "",
                                       f" ({source.date})" if source.date else "", ("   " + source.tier_detail, "dim")))
            if reference.url:
                lines.append(Text("    " + reference.url, style="dim"))
            if source.quote:
                lines.append(Text.assemble("    “", source.quote, "”"))
            if source.note:
                lines.append(Text("    " + source.note, style="dim"))
        if side.agreeing:
            count = len(side.agreeing)
            lines.append(Text(f"{count} other independent source{'s give' if count > 1 else ' gives'} this value: "
                              + "; ".join(side.agreeing), style="dim"))
        where = side.document_title + (f" › {side.section_title}" if side.section_title else "")
        where += f" ({name_of(side.language)} edition)" if side.language else ""
        verified = " · verified" if side.verified else ""
        parts.append(Panel(Group(*lines), title=f"the {side.side} — {escape(where)}{verified}", title_align="left"))
    if resolution.values_from == "word overlap":
        parts.append(Text("the values compared are the words that set the two statements apart: the model named "
                          "no conflicting passage and values", style="yellow"))
    if resolution.reasons:
        parts.append(Text("why:", style="bold"))
        parts += [Text("  • " + reason) for reason in resolution.reasons]
    if resolution.missing:
        parts.append(Text("what is missing:", style="bold"))
        parts += [Text("  • " + missing, style="yellow") for missing in resolution.missing]
    if resolution.explanation:
        parts.append(Text.assemble(("the model's reading: ", "dim"), resolution.explanation))
    return Group(*parts)


def show_resolution(resolution: Resolution, *, talk_page: Path | None = None, shown: Any = None) -> None:
    """Print the card and the talk-page draft (or write the draft to ``talk_page``)."""
    shown = shown or console
    shown.print(resolution_view(resolution))
    if resolution.talk_page is None:
        return
    if talk_page is not None:
        talk_page.write_text(resolution.talk_page, encoding="utf-8")
        shown.print(Text(f"talk-page draft for Talk:{resolution.talk_page_article} written to {talk_page} "
                         "(never posted: paste it yourself)", style="dim"))
        return
    shown.rule(f"talk-page draft for Talk:{resolution.talk_page_article} (wikitext; never posted)", style="dim")
    shown.print(resolution.talk_page, markup=False, highlight=False, soft_wrap=True)


# -- the work -------------------------------------------------------------------------------------
async def resolve_case(config: Config, case: SidesCase, retriever: Any = None) -> Resolution:
    """Resolve one case with the resolve system (through the executor)."""
    from claire.agent.runtime import open_system
    from claire.runs.executor import Executor

    resolving = config.with_overrides({"agent.system": "resolve", "agent.task": "sides"})
    async with open_system(resolving, retriever=retriever) as resolver:
        return (await Executor.for_config(config, 1).check(resolver, case, key=case.claim_id)).answer()


async def resolve_check(config: Config, claim: Claim, assessment: Assessment, retriever: Any = None) -> Resolution | None:
    """Resolve the contradiction a flagged check found (None when it names no passage), over
    ``retriever`` (None: the configured index, opened and closed here)."""
    import asyncio

    from claire.agent.runtime import open_retrieval
    from claire.resolving.flags import resolve_flag

    own = retriever is None
    retriever = retriever or await asyncio.to_thread(open_retrieval, config)
    try:
        return await resolve_flag(config, claim, assessment, retriever=retriever)
    finally:
        if own:
            retriever.close()


async def check_then_resolve(config: Config, claim: Claim) -> tuple[Assessment, Resolution | None]:
    """Check the fact; resolve it when flagged (one index for both)."""
    import asyncio

    from claire.agent.runtime import open_retrieval, open_system
    from claire.domain import recorded_outcome
    from claire.runs.executor import Executor

    retriever = await asyncio.to_thread(open_retrieval, config)
    try:
        async with open_system(config, retriever=retriever) as system:
            assessment = (await Executor.for_config(config, 1).check(system, claim, key=claim.claim_id)).answer()
        if recorded_outcome(assessment) != "flagged":
            return assessment, None
        return assessment, await resolve_check(config, claim, assessment, retriever)
    finally:
        retriever.close()


def run_record(run_dir: Path, claim_id: str) -> tuple[Claim, Assessment]:
    """The claim and the assessment of a run's record ``claim_id`` (its passages rebuilt from the trace)."""
    from claire.domain import Claim, recorded_outcome
    from claire.evals.runner import run_task
    from claire.resolving.cases import flagged_assessment
    from claire.runs.predictions import load_predictions, read_run_config

    stored = read_run_config(run_dir)
    if stored is None:
        raise ConfigError(f"{run_dir} is not a run directory of `claire eval` (no config.json)")
    task = run_task(stored)
    line = next((p for p in load_predictions(run_dir, task.line_model) if p["claim_id"] == claim_id), None)
    if line is None:
        raise ConfigError(f"{run_dir} has no record {claim_id!r}")
    if recorded_outcome(line) == "failed":
        raise ConfigError(f"record {claim_id!r} of {run_dir} has no verdict ({line.get('error') or 'no score'}): "
                          "check it again before resolving")
    claim = Claim(claim_id=claim_id, text=line.get("claim_text") or "")
    dataset = stored.get("dataset")
    if dataset and Path(dataset).is_file():
        claim = next((c for c in task.load_claims(dataset) if getattr(c, "claim_id", None) == claim_id), claim)
    assessment = flagged_assessment(line, claim)
    return claim, assessment


async def with_citations(config: Config, assessment: Assessment) -> Assessment:
    """A run's passages with the citations their blocks keep in the index (a trace keeps none)."""
    import asyncio

    from claire.agent.runtime import open_retrieval

    retriever = await asyncio.to_thread(open_retrieval, config)
    try:
        found = []
        for passage in assessment.evidence:
            hits = await asyncio.to_thread(retriever.search, passage.content[:300], k=5)
            block = next((h.block for h in hits if h.block.id == passage.id), None)
            found.append(passage.model_copy(update={"citations": block.citations}) if block else passage)
        return assessment.model_copy(update={"evidence": found})
    finally:
        retriever.close()


# -- the command ----------------------------------------------------------------------------------
@with_settings("index", "languages", "language", "preset", "model", "base_url", "no_cache", "refresh_cache", "config_file", "sets")
def resolve_command(
    fact: Annotated[Optional[str], typer.Argument(help="A fact to check, then resolve when flagged.")] = None,
    title: FactTitleOpt = None,
    section: FactSectionOpt = None,
    context: FactContextOpt = None,
    cases: Annotated[Optional[Path], typer.Option("--cases", help="A sides file (JSONL): resolve its case --id (or every case).")] = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run", help="A run directory of `claire eval`: resolve its flagged record --id.")] = None,
    ids: Annotated[Optional[str], typer.Option("--id", help="The case or record to resolve (comma-separated for several).")] = None,
    system: SystemOpt = None,
    sources: Annotated[Optional[Path], typer.Option("--sources", help="Cited pages to read instead of fetching them (JSONL: url, title, text, date?).")] = None,
    fetch: Annotated[Optional[bool], typer.Option("--fetch/--no-fetch", help="Fetch cited pages over HTTP (resolve.fetch).")] = None,
    talk_page: Annotated[Optional[Path], typer.Option("--talk-page", help="Write the talk-page draft to this file instead of showing it.")] = None,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """Which side of a contradiction is right: a card built from each side's citations, and a talk-page draft (never posted). Exit 0 nothing flagged (nothing to resolve), 1 a contradiction resolved (whatever the decision), 2 error or no decision."""
    given = [name for name, value in (("a fact", (fact or "").strip()), ("--cases", cases), ("--run", run_dir)) if value]
    if len(given) != 1:
        raise ConfigError("give one of: a fact to check (with --title), --cases FILE, or --run DIR --id ID"
                          if not given else f"give only one of {', '.join(given)}")
    if run_dir is not None and not ids:
        raise ConfigError("--run needs --id: the flagged record to resolve")
    if talk_page is not None:
        check_writable(talk_page, "--talk-page")
    config = settings.resolve(**{"agent.system": system, "resolve.sources": sources, "resolve.fetch": fetch})
    require_api_key(config)
    if config.agent.task not in ("wikicollide", "sides"):
        raise ConfigError(f"claire resolve works on WikiCollide facts, not the {config.agent.task} task")
    if config.agent.system == "resolve":
        config = config.with_overrides({"agent.system": "claire"})
    config = config.with_overrides({"agent.task": "wikicollide", "agent.report": False})
    from claire.domain import recorded_outcome

    shown = err if as_json else console
    resolutions: list[Resolution] = []
    if cases is not None:
        from claire.tasks.sides.records import load_cases

        chosen = load_cases(cases)
        if ids:
            wanted = [i.strip() for i in ids.split(",") if i.strip()]
            unknown = [i for i in wanted if i not in {c.claim_id for c in chosen}]
            if unknown:
                raise DatasetError(f"{cases} has no case {', '.join(unknown)}")
            chosen = [c for c in chosen if c.claim_id in wanted]
        with err.status(f"resolving {len(chosen)} case(s)…"):
            resolutions = [run(resolve_case(config, case)) for case in chosen]
    elif run_dir is not None:
        claim, assessment = run_record(run_dir, (ids or "").split(",")[0].strip())
        if recorded_outcome(assessment) != "flagged":
            shown.print(Text.assemble(("CONSISTENT", "bold green"), f" record {claim.claim_id}: nothing contradicts "
                                      "the fact, so there is nothing to resolve"))
            if as_json:
                print(json.dumps({"assessment": assessment.model_dump(mode="json"), "resolution": None}, indent=2))
            raise typer.Exit(ExitCode.OK)
        with err.status("reading the record's passages and resolving…"):
            assessment = run(with_citations(config, assessment))
            resolution = run(resolve_check(config, claim, assessment))
        if resolution is None:
            raise ConfigError(f"record {claim.claim_id!r} names no passage it conflicts with")
        resolutions = [resolution]
    else:
        from claire.domain import Claim, Passage

        claim = Claim(claim_id="cli", text=(fact or "").strip(),
                      context=Passage(document_title=title or "", section_title=section or "", content=(context or "").strip()))
        with err.status("checking the fact…"):
            assessment, resolution = run(check_then_resolve(config, claim))
        outcome = recorded_outcome(assessment)
        if outcome == "failed":
            err.print(Text.assemble(("error: ", "red"), f"no verdict for this fact: {assessment.error or 'no score'}"))
            raise typer.Exit(ExitCode.ERROR)
        if outcome == "consistent":
            shown.print(Text.assemble(("CONSISTENT", "bold green"), f" inconsistency score {assessment.score:.2f}: "
                                      "nothing contradicts the fact, so there is nothing to resolve"))
            if as_json:
                print(json.dumps({"assessment": assessment.model_dump(mode="json"), "resolution": None}, indent=2))
            raise typer.Exit(ExitCode.OK)
        if resolution is None:
            raise ConfigError("the check flagged the fact but named no passage it conflicts with")
        resolutions = [resolution]
    if as_json:
        data = [r.model_dump(mode="json") for r in resolutions]
        print(json.dumps(data[0] if len(data) == 1 else data, indent=2, ensure_ascii=False))
        if talk_page is not None and resolutions[0].talk_page:
            talk_page.write_text(resolutions[0].talk_page, encoding="utf-8")
    else:
        for resolution in resolutions:
            show_resolution(resolution, talk_page=talk_page if len(resolutions) == 1 else None, shown=shown)
    if any(r.decision is None for r in resolutions):
        raise typer.Exit(ExitCode.ERROR)
    raise typer.Exit(ExitCode.FLAGGED)  # a contradiction was there, and resolved
