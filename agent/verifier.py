"""The end of a CLAIRE run: the verifier node (the task's judge over everything gathered) and
the optional two-sided report (the strongest case for "consistent" and for "inconsistent", each
citing passages [n]). Retrieve-and-verify uses the same judge and trace items.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from langgraph.runtime import Runtime

from claire.agent.state import ResearchContext, ResearchState
from claire.errors import ClaireError
from claire.domain import Claim, Evidence, TraceItem
from claire.llm.answers import text_of
from claire.prompts.budget import FitNote
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.tasks.base import Judgement, judging_prompt


def verdict_items(verdict: Judgement) -> list[TraceItem]:
    """The trace of a judgement: what the context budget left out (when it did), then the verdict."""
    items = [TraceItem.model_validate(verdict.fit.trace_item())] if verdict.fit is not None and verdict.fit.changed else []
    output: dict[str, Any] = {"inconsistency_score": verdict.score, "analysis": verdict.analysis}
    if verdict.label is not None:
        output.update(label=verdict.label, evidence=verdict.evidence_elements)
    return items + [TraceItem(action_name="verifier", action_argument=None, action_output=output)]


async def verifier(state: ResearchState, runtime: Runtime[ResearchContext]) -> dict[str, Any]:
    """Judge the claim from every passage and clarification gathered."""
    context = runtime.context
    assert context.task is not None
    try:
        verdict = await context.task.judge(state.claim, state.evidence, clarifications=state.clarifications,
                                           explanations=state.explanations, llm=context.llm, prompts=context.prompts)
    except ClaireError as error:
        return {"errors": [f"verifier: {error}"]}
    errors = [f"verifier: {verdict.error}"] if verdict.error else []
    return {"verdict": verdict, "trace": verdict_items(verdict), "errors": errors}


async def two_sided_report(claim: Claim, documents: Sequence[Evidence], clarifications: list[dict[str, str]],
                           llm: ChatClient, prompts: PromptLibrary, *, explanations: Sequence[dict[str, str]] = (),
                           ) -> tuple[dict[str, str], list[FitNote]]:
    """The strongest case for each verdict, each citing [n]; the two calls run concurrently.
    Returns the report and what the context budget left out of each prompt."""
    consistent, consistent_fit = judging_prompt("report_consistent", claim, documents, clarifications, llm, prompts,
                                                explanations=explanations)
    inconsistent, inconsistent_fit = judging_prompt("report_inconsistent", claim, documents, clarifications, llm, prompts,
                                                    explanations=explanations)
    answers = await asyncio.gather(llm.ainvoke(consistent), llm.ainvoke(inconsistent))
    report = {"consistent": text_of(answers[0]).strip(), "inconsistent": text_of(answers[1]).strip()}
    return report, [consistent_fit, inconsistent_fit]


async def write_report(state: ResearchState, runtime: Runtime[ResearchContext]) -> dict[str, Any]:
    """The two-sided report (a failure is only a warning: the verdict stands)."""
    context = runtime.context
    try:
        written, notes = await two_sided_report(state.claim, state.evidence, state.clarifications, context.llm,
                                                context.prompts, explanations=state.explanations)
    except ClaireError as error:
        return {"errors": [f"report: {error}"]}
    return {"report": written, "trace": [TraceItem.model_validate(n.trace_item()) for n in notes if n.changed]}
