"""``claire check``: one fact against the corpus, with a status line from the first moment, a live
view of the research, and a review of a flagged verdict with its evidence in front of you. The
command (flags, exit status), and the check itself (:func:`research`: the index, the system, the
executor); what the person sees is :class:`claire.cli.views.CheckView`'s."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.text import Text

from claire.cli.terminal import StatusLine
from claire.cli.options import (
    DocsPerQueryOpt, FactContextOpt, FactSectionOpt, FactTitleOpt, MaxStepsOpt, NoRerankOpt, Settings, SystemOpt, ToolsOpt, check_writable, console, err,
    passage_text, require_api_key, run, with_settings,
)
from claire.errors import ConfigError, ExitCode

if TYPE_CHECKING:
    from claire.cli.views import CheckView
    from claire.domain import Assessment


@with_settings("index", "languages", "language", "preset", "model", "base_url", "no_cache", "refresh_cache", "config_file", "sets")
def check_command(
    fact: Annotated[Optional[str], typer.Argument(help="The fact to check.")] = None,
    title: FactTitleOpt = None,
    section: FactSectionOpt = None,
    context: FactContextOpt = None,
    context_file: Annotated[Optional[Path], typer.Option("--context-file", help="Read the passage from a file.")] = None,
    system: SystemOpt = None,
    max_steps: MaxStepsOpt = None,
    docs_per_query: DocsPerQueryOpt = None,
    no_rerank: NoRerankOpt = False,
    tools: ToolsOpt = None,
    no_review: Annotated[bool, typer.Option("--no-review", help="Do not ask you to confirm or reject a flagged verdict (asked only in a terminal).")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the two-sided report.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (in a terminal the status and any review go to stderr).")] = False,
    task: Annotated[Optional[str], typer.Option("--task", help="wikicollide (default) or feverous: a three-way label with cited element ids (agent.task).")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="Go on with an interrupted interactive check (its thread id).")] = None,
    trace_out: Annotated[Optional[Path], typer.Option("--trace-out", help="Write the trace (WikiCollide agent_trace shape) here.")] = None,
    resolve: Annotated[bool, typer.Option("--resolve", help="When the fact is flagged, say which side is right: each side's sources read and rated, and a talk-page draft (claire resolve).")] = False,
    *,
    settings: Settings,
) -> None:
    """Check one fact against the corpus. Exit code: 0 consistent, 1 inconsistent (--task feverous: REFUTES; your review decides when you gave one), 2 error."""
    started = time.monotonic()
    if resume is not None and (fact or no_review or not sys.stdin.isatty()):
        raise ConfigError("--resume goes on with a saved interactive check: give no fact and no --no-review, in a terminal")
    if resume is None and not (fact or "").strip():
        raise ConfigError("the fact is empty: give the sentence to check")
    if context_file is not None:
        context = passage_text(None, context_file)
    if trace_out is not None:
        check_writable(trace_out, "--trace-out")
    interactive = sys.stdin.isatty() and not no_review
    shown = err if as_json else console  # where the status line, the steps and the review go (--json: stderr)
    with StatusLine(shown, "reading the configuration…") as status:
        config = settings.resolve(
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
        require_api_key(config)
        if config.agent.report is None:  # the two-sided report is on by default for a single check
            config = config.with_overrides({"agent.report": True})
        status.update("loading the agent (LangChain, LangGraph)…")
        from claire.cli.views import CheckView
        from claire.domain import Claim, Passage

        claim = None
        if resume is None:
            from claire.tasks.fact_limits import check_fact

            if warning := check_fact((fact or "").strip(), config.agent.max_fact_chars):
                err.print(f"[yellow]warning:[/] {escape(warning)}")
            claim = Claim(claim_id="cli", text=(fact or "").strip(),
                          context=Passage(document_title=title or "", section_title=section or "", content=(context or "").strip()))
        view = CheckView(shown, claim, config, quiet=as_json, resume=resume, status=status, started=started)
        assessment = run(research(view))
    trace_failed = False
    if trace_out is not None:
        try:
            trace_out.write_text(json.dumps([t.model_dump() for t in assessment.trace], indent=2, ensure_ascii=False,
                                            allow_nan=False, default=str), encoding="utf-8")
        except (OSError, ValueError) as error:
            trace_failed = True
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            err.print(f"[red]error:[/] cannot write --trace-out {escape(str(trace_out))}: {escape(reason)}")
    # one rule (claire.domain): a check that met an error (its research cut short, e.g. by an LLM outage) is no verdict
    from claire.domain import recorded_outcome

    failed = recorded_outcome(assessment) == "failed"
    resolution = None
    if resolve and recorded_outcome(assessment) == "flagged" and claim is not None:
        from claire.cli.resolve import resolve_check

        with StatusLine(err, "resolving: reading and rating each side's sources…"):
            resolution = run(resolve_check(config, claim, assessment))
        if resolution is None:
            err.print("[yellow]warning:[/] the check named no passage it conflicts with: nothing to resolve")
    if as_json and resolve:
        print(json.dumps({"assessment": assessment.model_dump(mode="json"),
                          "resolution": resolution.model_dump(mode="json") if resolution else None}, indent=2,
                         ensure_ascii=False))
    elif as_json:
        print(assessment.model_dump_json(indent=2))
    elif not failed:
        view.final(assessment)
        if resolution is not None:
            from claire.cli.resolve import show_resolution

            show_resolution(resolution)
    if failed:  # no verdict: the cause, on one line, where errors go
        reached = "" if assessment.score is None else f" (the score its cut-short research reached, {assessment.score:.2f}, is no verdict; check it again)"
        err.print(Text.assemble(("error: ", "red"), f"no verdict for this fact: {assessment.error or 'no score was produced'}{reached}"))
        raise typer.Exit(ExitCode.ERROR)
    if trace_failed:  # the verdict stands above; the output asked for is missing: not done
        raise typer.Exit(ExitCode.ERROR)
    review = assessment.details.get("review")
    if review:  # the person's decision is the answer
        raise typer.Exit(ExitCode.FLAGGED if recorded_outcome(review) == "flagged" else ExitCode.OK)
    from claire.tasks.registry import get_task

    raise typer.Exit(get_task(config.agent.task).exit_code(assessment.verdict, assessment.label))


# -- the check itself ---------------------------------------------------------------------------
# The view says what happens; these open the index and the system and check the claim through the
# executor (imported when a check runs: ``claire check --help`` loads none of it).

async def research(view: CheckView) -> Assessment:
    """Open what the check needs, saying so, then check the claim (or resume a saved check)."""
    retriever = await _open_retrieval(view)
    try:
        return await _check(view, retriever)
    finally:
        retriever.close()


async def _open_retrieval(view: CheckView) -> Any:
    """The index, built first when it is the demo one and missing (with its progress on the status line)."""
    import asyncio

    from claire.agent.runtime import demo_for, open_retrieval
    from claire.errors import redact
    from claire.indexes.retriever import MULTILINGUAL_DEMO, demo_index_ready, ensure_demo_index

    retrieval = view.config.retrieval
    demo = demo_for(retrieval)
    if retrieval.backend == "qdrant" and demo in ("demo", MULTILINGUAL_DEMO) and retrieval.url is None:
        root = retrieval.index_root()
        if not demo_index_ready(root, demo):
            view.say(f"building the {demo} index (first use): loading the embedder…")

            def progress(done: int, total: int) -> None:
                view.say(f"building the {demo} index (first use): {done}/{total} passages embedded")

            await asyncio.to_thread(ensure_demo_index, root, retrieval.embedder, demo, progress)
    where = redact(retrieval.url) if retrieval.url else demo
    view.say(f"loading the embedder and opening the index {where}…" if retrieval.backend == "qdrant"
             else "connecting to the search service…")
    return await asyncio.to_thread(open_retrieval, view.config)


async def _check(view: CheckView, retriever: Any) -> Assessment:
    """Check the claim (or go on with a saved check) with the configured system, through the executor."""
    import uuid

    from claire.agent.runtime import open_system
    from claire.domain import Claim
    from claire.usage import track_usage
    from claire.runs.executor import Executor

    reviewer = view.review if view.config.agent.review else None
    on_step = None if view.quiet else view.on_step
    async with open_system(view.config, reviewer=reviewer, retriever=retriever) as system:
        if view.resume is not None:
            if not hasattr(system, "resume"):
                raise ConfigError(f"--resume works with the claire system, not {system.name}")
            view.say("going on with the saved check…")
            assessment = await system.resume(view.resume)
            view.claim = Claim(claim_id=assessment.claim_id, text=assessment.claim_text)
            return assessment
        assert view.claim is not None
        kwargs: dict[str, Any] = {}
        if reviewer is not None and hasattr(system, "resume"):
            kwargs["thread_id"] = f"check-{uuid.uuid4().hex[:8]}"
            view.console.print(Text("progress is saved; if interrupted, go on with:", style="dim"))
            view.console.print(Text(f"  claire check --resume {kwargs['thread_id']}", style="dim"), soft_wrap=True)
        if not view.quiet:
            view.console.print(Text.assemble(("checking with ", "dim"), (system.name, "bold"), (f": {view.claim.text}", "")))
        view.say("researching…")
        with track_usage() as usage:  # the running total the status line shows
            view.llm_total = usage
            outcome = await Executor.for_config(view.config, 1).check(system, view.claim, key=view.claim.claim_id, on_step=on_step, **kwargs)
        return outcome.answer()
