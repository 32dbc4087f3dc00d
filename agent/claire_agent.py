"""The CLAIRE system: :class:`ClaireAgent` runs the research graph (``agent.graph``) for one claim
and turns its final state into an :class:`~claire.agent.system.Assessment`.

The graph is compiled once (``graph.RESEARCH``); everything of one run — the services, the
settings, the task — travels in its run context (:class:`~claire.agent.state.ResearchContext`).
A step listener gets each trace item as it is added (read from the graph's ``updates`` stream,
only when someone listens). Interactive runs, where a person confirms or rejects a flagged verdict,
save every step with the SQLite checkpointer under a thread id so ``claire check --resume`` can
go on after an interruption.
"""

from __future__ import annotations

import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, ClassVar

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from claire.agent.controller import steps_taken
from claire.agent.graph import RESEARCH, compile_research
from claire.agent.state import ResearchContext, ResearchState
from claire.agent.system import StepListener, SystemParts, step_listeners
from claire.domain import Assessment, BlockElement, Claim, Evidence, Passage, ScoreKind, TraceItem
from claire.settings import data_dir
from claire.errors import ClaireError, ConfigError
from claire.prompts.budget import FitNote
from claire.usage import track_usage
from claire.tasks.base import Judgement
from claire.tools.registry import tools_for

Reviewer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Shows a person a flagged verdict's case (:func:`claire.agent.graph.review_case`) and returns the
decision: ``{"decision": "accept" | "reject", "comment": str | None}``."""


def reviewed_verdict(verdict: str | None, decision: str) -> str | None:
    """The verdict after a person's decision: accept keeps the system's verdict, reject turns it
    over (a flagged fact is then consistent, and the other way round)."""
    if verdict not in ("consistent", "inconsistent"):
        return None
    if decision == "accept":
        return verdict
    return "consistent" if verdict == "inconsistent" else "inconsistent"

CHECKPOINT_TYPES = (Claim, Passage, Evidence, BlockElement, TraceItem, Judgement, FitNote)
"""The types of CLAIRE's own that a saved interactive check holds (what the checkpointer may load)."""


@dataclass(kw_only=True, eq=False)
class ClaireAgent:
    """The CLAIRE system. ``assess`` runs the graph for one claim and always returns an Assessment."""

    name = "claire"
    score_kind: ClassVar[ScoreKind] = "probability"
    reads: ClassVar[tuple[str, ...]] = ("llm.", "retrieval.", "agent.", "prompts.")

    context: ResearchContext
    threshold: float
    reviewer: Reviewer | None = None
    on_step: StepListener | None = None
    checkpoints: Path | None = None

    @classmethod
    def from_config(cls, parts: SystemParts) -> "ClaireAgent":
        """The agent of the configuration's ``agent.*`` settings over the search engine (a person
        reviews flagged verdicts when ``agent.review`` is on and a reviewer is given)."""
        agent = parts.config.agent
        reviewer = parts.reviewer if agent.review else None
        context = ResearchContext(
            llm=parts.llm, search=parts.search(), prompts=parts.prompts, docs_per_query=agent.docs_per_query,
            clarify_k=agent.clarify_k, stop_on_report=agent.stop_on_report, review=reviewer is not None, task=parts.task,
            snippet_chars=agent.snippet_chars,
            tools=tuple(tools_for(agent.tools, finish=agent.finish_action or parts.task.always_finish)),
            max_steps=agent.max_steps, keep_observations=agent.keep_observations, report=bool(agent.report),
            threshold=agent.threshold, thoughts=agent.thoughts, parallel_actions=agent.parallel_actions,
        )
        return cls(context=context, threshold=agent.threshold, reviewer=reviewer, on_step=parts.on_step,
                   checkpoints=agent.checkpoints)

    @property
    def prompts(self) -> Any:
        """The prompt library the research renders (a run directory records its fingerprint)."""
        return self.context.prompts

    def checkpoint_path(self) -> Path:
        """Where interactive checks are saved (``agent.checkpoints``, else the user data folder)."""
        return self.checkpoints or data_dir() / "checkpoints.sqlite"

    @asynccontextmanager
    async def _graph(self) -> AsyncIterator[Any]:
        """The compiled graph for this run: the shared one, or — for interactive runs — one that
        saves every step to the SQLite checkpointer."""
        if self.reviewer is None:
            yield RESEARCH
            return
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = self.checkpoint_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"cannot create the checkpoint folder {path.parent}: {error.strerror} (set agent.checkpoints)") from None
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            saver.serde = JsonPlusSerializer(allowed_msgpack_modules=list(CHECKPOINT_TYPES))
            yield compile_research(saver)

    async def assess(self, claim: Claim, *, thread_id: str | None = None) -> Assessment:
        """Research one claim. In interactive runs the progress is saved under ``thread_id``
        (made up when not given; it is in ``details["thread_id"]``)."""
        thread = thread_id or f"{claim.claim_id}-{uuid.uuid4().hex[:8]}"
        return await self._drive(claim, ResearchState(claim=claim), thread)

    async def resume(self, thread_id: str) -> Assessment:
        """Go on with a saved interactive check: ask the pending review question again, or carry on
        from the last saved step."""
        if self.reviewer is None:
            raise ConfigError("resuming a check needs the interactive review (a terminal, without --no-review)")
        async with self._graph() as graph:
            snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        if not snapshot.values:
            raise ConfigError(f"no saved check '{thread_id}' in {self.checkpoint_path()}")
        claim = snapshot.values["claim"]
        if snapshot.interrupts:
            return await self._drive(claim, None, thread_id, pending=list(snapshot.interrupts),
                                     state=dict(snapshot.values))
        if not snapshot.next:  # it had finished: nothing left to run
            return self._assessment(claim, dict(snapshot.values), {}, 0.0)
        return await self._drive(claim, None, thread_id)

    async def _drive(self, claim: Claim, graph_input: Any, thread: str, pending: list[Any] | None = None,
                     state: dict[str, Any] | None = None) -> Assessment:
        started = time.perf_counter()
        run_config: dict[str, Any] = {"recursion_limit": 4 * self.context.max_steps + 20}
        if self.reviewer is not None:
            run_config["configurable"] = {"thread_id": thread}
        result: dict[str, Any] = dict(state or {})
        with track_usage() as usage:
            try:
                async with self._graph() as graph:
                    interrupts = pending or []
                    if not pending:
                        result, interrupts = await self._stream(graph, graph_input, run_config)
                    while self.reviewer is not None and interrupts:
                        answer = await self.reviewer(interrupts[0].value)
                        result, interrupts = await self._stream(graph, Command(resume=answer), run_config)
            except ClaireError as error:
                result["errors"] = list(result.get("errors", [])) + [str(error)]
        assessment = self._assessment(claim, result, usage.to_dict(), time.perf_counter() - started)
        if self.reviewer is not None:
            assessment.details["thread_id"] = thread
        return assessment

    async def _stream(self, graph: Any, graph_input: Any, run_config: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """Run the graph, handing each new trace item to the step listeners; returns the final state and
        any interrupts it stopped at."""
        state: dict[str, Any] = {}
        interrupts: list[Any] = []
        # Only the streams someone reads: each one costs the graph work at every step.
        listeners = step_listeners(self.on_step)
        listening = bool(listeners) or self.reviewer is not None
        modes = ["values", "updates"] if listening else ["values"]
        progress = _Progress(state)
        async for mode, chunk in graph.astream(graph_input, run_config, context=self.context, stream_mode=modes):
            if mode == "values":
                state = chunk
                progress.state = state
            elif isinstance(chunk, dict) and "__interrupt__" in chunk:
                interrupts = list(chunk["__interrupt__"])
            elif listeners:
                for event in progress.events(chunk):
                    for listener in listeners:
                        listener(event)
        return state, interrupts

    def _assessment(self, claim: Claim, state: dict[str, Any], usage: dict[str, Any], latency: float) -> Assessment:
        # A failed research step makes the result unreliable even with a score: it is an error, so
        # metrics leave it out and --retry-errors runs it again. A failed report is only a warning.
        errors = list(state.get("errors", []))
        warnings = [e for e in errors if e.startswith("report:")]
        errors = [e for e in errors if not e.startswith("report:")]
        verdict: Judgement = state.get("verdict") or Judgement()
        assessment = Assessment(
            claim_id=claim.claim_id,
            system=self.name,
            claim_text=claim.text,
            score=verdict.score,
            score_kind=self.score_kind,
            threshold=self.threshold,
            evidence=state.get("evidence", []),
            clarifications=state.get("clarifications", []),
            explanations=state.get("explanations", []),
            reported=state.get("reports", []),
            restated_claim=verdict.restated_claim,
            reasoning=verdict.analysis,
            report=state.get("report"),
            details={"steps": steps_taken(state.get("messages", [])), "stop_reason": state.get("stop_reason"),
                     "warnings": warnings},
            trace=state.get("trace", []),
            usage=usage,
            latency_s=round(latency, 3),
            error="; ".join(errors) or (None if verdict.score is not None or verdict.label else "no score was produced"),
            label=verdict.label,
            evidence_elements=verdict.evidence_elements,
        )
        assessment.decide()
        if state.get("review"):  # a person's latest decision on a flagged verdict, and what it makes of it
            # (after feedback that sent the research on, the verdict is the new research's own)
            before = assessment.verdict or ("inconsistent" if assessment.label == "REFUTES" else None)
            decision = state["review"]
            after = before if decision.get("continued") else reviewed_verdict(before, decision["decision"])
            assessment.details["review"] = {**decision, "system_verdict": before, "verdict": after}
        return assessment


class _Progress:
    """Turns the graph's ``updates`` stream into step events: each new trace item with the number
    of steps taken and passages gathered so far."""

    def __init__(self, state: dict[str, Any]):
        self.state = state
        self.steps: int | None = None
        self.documents: int | None = None

    def events(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """The step events of one node's update (a ToolNode's update may be a list of updates)."""
        if self.steps is None:
            self.steps = steps_taken(self.state.get("messages", []))
            self.documents = len(self.state.get("evidence", []))
        events = []
        for update in chunk.values():
            for part in update if isinstance(update, list) else [update]:
                if not isinstance(part, dict):
                    part = getattr(part, "update", None) or {}
                self.steps += sum(1 for m in part.get("messages") or [] if isinstance(m, ToolMessage))
                self.documents += len(part.get("evidence") or [])
                for item in part.get("trace") or []:
                    events.append({"item": item.model_dump(mode="json"), "steps": self.steps, "documents": self.documents})
        return events
