"""CLAIRE as a LangGraph state machine: a controller picks one action per step, the tools node
runs it, and the verifier turns everything gathered into an inconsistency score.

    START -> controller -> (tools | verifier); tools -> (controller | review | verifier) ... verifier -> (report) -> END

(``finish``, and a spent step budget, go from the controller straight to the verifier.)

The step budget is enforced by the graph (the controller hands over to the verifier when it is
spent), not by LangGraph's recursion limit. In interactive runs a reported inconsistency pauses
the graph (``interrupt``) until a person accepts, rejects or comments on it.

Lists in the state grow through reducers (each node returns only what it adds); the run settings
(step budget, passages per query, ...) travel in the graph's run context, not in the compiled
graph; every step is written to the graph's custom stream, and ``on_step`` is a thin listener on
that stream. Each prompt is fitted to the model's context window (``agent.budget``): what was
condensed or left out appears in the trace as a ``context_budget`` step.
"""

from __future__ import annotations

import operator
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Awaitable, Callable, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from claire.agent.actions import Action, read_action
from claire.agent.budget import FitNote, fit_history
from claire.agent.llm import LLMClient
from claire.agent.system import Assessment, Claim, Evidence, TraceItem
from claire.agent.usage import track_usage
from claire.agent.verifier import two_sided_report, verify
from claire.config import Config, data_dir
from claire.errors import ClaireError, ConfigError
from claire.prompts import PromptLibrary
from claire.tools.clarify_entity import clarify_entity
from claire.tools.explain import explain
from claire.tools.report_inconsistency import report_inconsistency
from claire.tools.search import SearchTool
from claire.tools.specs import specs_for

StepListener = Callable[[dict[str, Any]], None]
Reviewer = Callable[[dict[str, Any]], Awaitable[str]]
SNIPPET_CHARS = 400


Added = operator.add  # a list field's reducer: a node's update is appended, never copied


class ResearchState(TypedDict, total=False):
    claim: dict[str, Any]
    steps: int
    history: Annotated[list[dict[str, str]], Added]  # {action, argument, observation} as the controller sees them
    documents: Annotated[list[dict[str, Any]], Added]  # Evidence dumps, numbered in first-seen order
    clarifications: Annotated[list[dict[str, str]], Added]
    explanations: Annotated[list[dict[str, str]], Added]
    reported: Annotated[list[str], Added]
    pending: dict[str, Any] | None  # the action the controller chose, not yet run
    awaiting_review: bool  # a new inconsistency was just reported in an interactive run
    finished: bool
    stop_reason: str
    score: float | None
    label: str | None  # task "feverous"
    evidence_elements: list[str]  # task "feverous"
    restated_claim: str | None
    reasoning: str | None
    report: dict[str, str] | None
    trace: Annotated[list[dict[str, Any]], Added]
    errors: Annotated[list[str], Added]
    condensed: list[int]  # controller steps the context budget has condensed or left out so far


@dataclass(frozen=True)
class RunSettings:
    """The settings one run reads (the graph's run context): change them without recompiling."""

    max_steps: int
    docs_per_query: int
    clarify_k: int
    stop_on_report: bool
    report: bool
    keep_observations: int = 2

    @classmethod
    def from_config(cls, config: Config) -> "RunSettings":
        agent = config.agent
        return cls(max_steps=agent.max_steps, docs_per_query=agent.docs_per_query, clarify_k=agent.clarify_k,
                   stop_on_report=agent.stop_on_report, report=bool(agent.report),
                   keep_observations=agent.keep_observations)


def evidence_from_hit(hit: Any, n: int) -> Evidence:
    block = hit.block
    return Evidence(
        n=n, block_id=block.id, document_title=block.document_title, section_title=block.section_title,
        content=block.content, url=block.url, score=hit.score,
        elements=[e.model_dump() for e in block.elements] if getattr(block, "elements", None) else None,
    )


def _passage_view(doc: dict[str, Any]) -> dict[str, Any]:
    """A gathered document as a trace passage (WikiCollide's shape plus our number and id)."""
    return {k: doc.get(k) for k in ("n", "block_id", "document_title", "section_title", "content", "url")}


class ClaireAgent:
    """The CLAIRE system. ``assess`` runs the graph for one claim and always returns an Assessment."""

    name = "claire"

    def __init__(
        self,
        *,
        config: Config,
        llm: LLMClient,
        search: SearchTool,
        prompts: PromptLibrary,
        reviewer: Reviewer | None = None,
        on_step: StepListener | None = None,
    ):
        self.config = config
        self.llm = llm
        self.search_tool = search
        self.prompts = prompts
        self.reviewer = reviewer if config.agent.review else None
        self.on_step = on_step
        self.enabled = list(config.agent.tools)
        self.specs = specs_for(self.enabled)
        self.allowed = [spec.name for spec in self.specs]
        self.native = llm.tool_calling == "native"
        self.graph = self._build().compile()  # interactive runs compile their own, with the SQLite checkpointer

    # -- graph -----------------------------------------------------------------------------
    def _build(self) -> StateGraph:
        # The three deciding nodes route themselves (they return a Command naming the next node):
        # cheaper per step than conditional edges, which LangGraph runs as separate traced steps.
        graph = StateGraph(ResearchState, context_schema=RunSettings)
        graph.add_node("controller", self._routed(self._controller, self._after_controller), destinations=("tools", "verifier"))
        graph.add_node("tools", self._routed(self._tools, self._after_tools), destinations=("controller", "review", "verifier"))
        graph.add_node("review", self._review)
        graph.add_node("verifier", self._routed(self._verifier, self._after_verifier), destinations=("report", END))
        graph.add_node("report", self._report)
        graph.add_edge(START, "controller")
        graph.add_edge("review", "controller")
        graph.add_edge("report", END)
        return graph

    @staticmethod
    def _routed(node: Callable[..., Awaitable[dict[str, Any]]],
                route: Callable[[ResearchState, RunSettings], str]) -> Callable[..., Awaitable[Command]]:
        """``node`` returning its update with the next node, chosen by ``route`` over the state as
        the update leaves it (routes read only single-valued fields, which an update replaces)."""

        async def run(state: ResearchState, runtime: Runtime[RunSettings]) -> Command:
            update = await node(state, runtime)
            return Command(update=update, goto=route({**state, **update}, runtime.context))  # type: ignore[typeddict-item]

        return run

    def _emit(self, state: ResearchState, item: dict[str, Any], **extra: Any) -> None:
        """Write one step to the graph's custom stream (``assess`` hands it to ``on_step``; nothing
        else reads that stream, so without a listener there is nothing to write)."""
        if self.on_step is not None:
            get_stream_writer()({"item": item, "steps": state.get("steps", 0), "documents": len(state.get("documents", [])), **extra})

    def _claim(self, state: ResearchState) -> Claim:
        return Claim.model_validate(state["claim"])

    async def _controller(self, state: ResearchState, runtime: Runtime[RunSettings]) -> dict[str, Any]:
        settings = runtime.context
        steps_left = settings.max_steps - state.get("steps", 0)
        if steps_left <= 0:
            item = {"action_name": "budget_exhausted", "action_argument": None,
                    "action_output": f"the step budget of {settings.max_steps} is spent"}
            self._emit(state, item)
            return {"pending": None, "stop_reason": "step budget spent", "trace": [item]}
        claim = self._claim(state)
        tools = [s.openai_schema() for s in self.specs] if self.native else None

        def render(history: list[dict[str, str]]) -> list[dict[str, Any]]:
            return self.prompts.render(
                "controller",
                claim=claim.text,
                context=claim.context.model_dump(),
                tools=[{"name": s.name, "argument": s.argument, "description": s.description} for s in self.specs if s.name != "finish"],
                history=history,
                steps_left=steps_left,
                text_actions=not self.native,
            )

        messages, fit = fit_history(render, state.get("history", []), count=lambda m: self.llm.count_tokens(m, tools),
                                    budget=self.llm.prompt_budget(), keep_latest=settings.keep_observations)
        update: dict[str, Any] = {}
        shortened = sorted(set(fit.condensed_steps + fit.omitted_steps + fit.trimmed_steps))
        if shortened and shortened != state.get("condensed", []):  # the trace notes each change, not every call
            item = fit.trace_item()
            self._emit(state, item)
            update.update(trace=[item], condensed=shortened)
        try:
            if self.native:
                response = await self.llm.chat(messages, tools=tools, tool_choice="auto")
            else:
                response = await self.llm.chat(messages)
        except ClaireError as error:
            return {**update, "pending": None, "stop_reason": "LLM error in the controller",
                    "errors": [f"controller: {error}"]}
        action = read_action(response, self.allowed)
        if action.name == "finish" and not action.problem:  # nothing to run: the research ends here
            return {**self._step(state, action, "Research finished.", None, finished=True, update=update), "pending": None}
        return {**update, "pending": {"name": action.name, "argument": action.argument, "problem": action.problem}}

    @staticmethod
    def _after_controller(state: ResearchState, settings: RunSettings) -> str:
        return "tools" if state.get("pending") else "verifier"

    def _step(self, state: ResearchState, action: Action, observation: str, output: Any, *, finished: bool,
              update: dict[str, Any]) -> dict[str, Any]:
        """The state update that records one taken action (added to what ``update`` gathered)."""
        item = {"action_name": action.name, "action_argument": action.argument or None, "action_output": output}
        update.update(
            awaiting_review=self.reviewer is not None and bool(update.get("reported")),
            steps=state.get("steps", 0) + 1,
            history=[{"action": action.name, "argument": action.argument, "observation": observation}],
            trace=[*update.get("trace", []), item],  # after any note this step already made (a condensed history)
            finished=finished,
        )
        if finished:
            update["stop_reason"] = "the model finished" if action.name == "finish" else "an inconsistency was reported"
        if self.on_step is not None:
            self._emit({**state, "steps": update["steps"], "documents": state.get("documents", []) + update.get("documents", [])},
                       item, observation=observation)
        return update

    async def _tools(self, state: ResearchState, runtime: Runtime[RunSettings]) -> dict[str, Any]:
        action = Action(**state["pending"])  # type: ignore[arg-type]
        claim = self._claim(state)
        # What this step adds (the reducers append it to the state's lists).
        update: dict[str, Any] = {"documents": [], "clarifications": [], "explanations": [], "reported": [], "errors": []}
        output: Any
        finished = False
        repeated = next((h for h in state.get("history", []) if (h["action"], h["argument"]) == (action.name, action.argument)), None)
        if action.problem:
            observation = output = f"Invalid action: {action.problem}."
        elif repeated is not None:
            observation = output = (f"You already ran {action.name}({action.argument}); its result is in step "
                                    f"{state['history'].index(repeated) + 1} above. Choose a different action.")
        else:
            try:
                observation, output, finished = await self._run_tool(action, claim, state, update, runtime.context)
            except ClaireError as error:
                observation = output = f"The {action.name} tool failed: {error}"
                update["errors"].append(f"{action.name}: {error}")
        return self._step(state, action, observation, output, finished=finished, update=update)

    async def _run_tool(
        self, action: Action, claim: Claim, state: ResearchState, update: dict[str, Any], settings: RunSettings
    ) -> tuple[str, Any, bool]:
        """Run one valid action, adding what it finds to ``update``; returns (observation for the
        controller, trace output, finished)."""
        if action.name == "search":
            hits = await self.search_tool.search(action.argument, exclude_title=claim.context.document_title or None, k=settings.docs_per_query)
            if not hits:
                return "No passages found for this query. Try other words or another angle.", [], False
            seen = {d["block_id"]: d for d in state.get("documents", [])}
            lines, passages = [], []
            for hit in hits:
                known = seen.get(hit.block.id)
                if known is None:
                    known = evidence_from_hit(hit, len(seen) + 1).model_dump()
                    seen[hit.block.id] = known
                    update["documents"].append(known)
                    snippet = " ".join(hit.block.content.split())[:SNIPPET_CHARS]
                    lines.append(f"[{known['n']}] {hit.block.document_title} > {hit.block.section_title}: {snippet}")
                else:
                    lines.append(f"[{known['n']}] (seen before) {hit.block.document_title} > {hit.block.section_title}")
                passages.append(_passage_view(known))
            return "\n".join(lines), passages, False
        if action.name == "clarify_entity":
            note, _ = await clarify_entity(
                action.argument, claim=claim.text, search=self.search_tool, llm=self.llm, prompts=self.prompts,
                k=settings.clarify_k, exclude_title=claim.context.document_title or None,
            )
            update["clarifications"].append({"entity": action.argument, "text": note})
            return note, note, False
        if action.name == "explain":
            note = await explain(action.argument, claim=claim.text, llm=self.llm, prompts=self.prompts)
            update["explanations"].append({"topic": action.argument, "text": note})
            return note, note, False
        if action.name == "report_inconsistency":
            stops = settings.stop_on_report and self.reviewer is None
            observation = report_inconsistency(action.argument, update["reported"], stops_research=stops)
            return observation, observation, stops
        raise ClaireError(f"no tool runs the action {action.name}")  # finish ends the research in the controller

    @staticmethod
    def _after_tools(state: ResearchState, settings: RunSettings) -> str:
        if state.get("awaiting_review"):
            return "review"
        return "verifier" if state.get("finished") else "controller"

    async def _review(self, state: ResearchState) -> dict[str, Any]:
        answer = interrupt({"claim": state["claim"]["text"], "evidence": state["reported"][-1]})
        observation = f"The human reviewer answered: {answer}"
        item = {"action_name": "human_review", "action_argument": state["reported"][-1], "action_output": str(answer)}
        self._emit(state, item)
        return {"history": [{"action": "human_review", "argument": state["reported"][-1], "observation": observation}],
                "trace": [item], "awaiting_review": False}

    async def _verifier(self, state: ResearchState, runtime: Runtime[RunSettings]) -> dict[str, Any]:
        claim = self._claim(state)
        documents = [Evidence.model_validate(d) for d in state.get("documents", [])]
        clarifications = state.get("clarifications", [])
        try:
            verdict = await verify(claim, documents=documents, clarifications=clarifications, llm=self.llm, prompts=self.prompts,
                                   task=self.config.agent.task)
        except ClaireError as error:
            return {"score": None, "errors": [f"verifier: {error}"]}
        items = self._fit_items(state, [verdict.fit])
        item = {"action_name": "verifier", "action_argument": None,
                "action_output": {"inconsistency_score": verdict.score, "analysis": verdict.analysis}}
        if verdict.label is not None:
            item["action_output"].update(label=verdict.label, evidence=verdict.evidence_elements)
        self._emit(state, item)
        errors = [f"verifier: {verdict.error}"] if verdict.error else []
        return {"score": verdict.score, "label": verdict.label, "evidence_elements": verdict.evidence_elements,
                "restated_claim": verdict.restated_claim, "reasoning": verdict.analysis, "trace": items + [item], "errors": errors}

    def _fit_items(self, state: ResearchState, notes: list[FitNote | None]) -> list[dict[str, Any]]:
        items = [note.trace_item() for note in notes if note is not None and note.changed]
        for item in items:
            self._emit(state, item)
        return items

    @staticmethod
    def _after_verifier(state: ResearchState, settings: RunSettings) -> str:
        return "report" if settings.report and state.get("score") is not None else END

    async def _report(self, state: ResearchState) -> dict[str, Any]:
        claim = self._claim(state)
        documents = [Evidence.model_validate(d) for d in state.get("documents", [])]
        notes: list[FitNote] = []
        try:
            report = await two_sided_report(claim, documents=documents, clarifications=state.get("clarifications", []),
                                            llm=self.llm, prompts=self.prompts, notes=notes)
        except ClaireError as error:
            return {"errors": [f"report: {error}"]}
        return {"report": report, "trace": self._fit_items(state, notes)}

    # -- System interface ------------------------------------------------------------------
    def checkpoint_path(self) -> Path:
        return self.config.agent.checkpoints or data_dir() / "checkpoints.sqlite"

    @asynccontextmanager
    async def _run_graph(self) -> AsyncIterator[Any]:
        """The graph for one run: interactive runs save every step to the SQLite checkpointer, so
        an interrupted review can be resumed from another process."""
        if self.reviewer is None:
            yield self.graph
            return
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = self.checkpoint_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"cannot create the checkpoint folder {path.parent}: {error.strerror} (set agent.checkpoints)") from None
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            yield self._build().compile(checkpointer=saver)

    async def assess(self, claim: Claim, *, thread_id: str | None = None) -> Assessment:
        """Research one claim. In interactive runs the progress is saved under ``thread_id``
        (made up when not given; it is in ``details["thread_id"]``)."""
        state: dict[str, Any] = {"claim": claim.model_dump(), "steps": 0, "history": [], "documents": [], "trace": [], "errors": []}
        thread = thread_id or f"{claim.claim_id}-{uuid.uuid4().hex[:8]}"
        return await self._drive(claim, state, thread)

    async def resume(self, thread_id: str) -> Assessment:
        """Go on with a saved interactive check: ask the pending review question again, or carry on
        from the last saved step."""
        if self.reviewer is None:
            raise ConfigError("resuming a check needs the interactive review (a terminal, without --no-review)")
        async with self._run_graph() as graph:
            snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        if not snapshot.values:
            raise ConfigError(f"no saved check '{thread_id}' in {self.checkpoint_path()}")
        claim = Claim.model_validate(snapshot.values["claim"])
        if snapshot.interrupts:
            return await self._drive(claim, None, thread_id, pending=list(snapshot.interrupts))
        if not snapshot.next:  # it had finished: nothing left to run
            return self._assessment(claim, dict(snapshot.values), {}, 0.0)
        return await self._drive(claim, None, thread_id)

    async def _drive(self, claim: Claim, graph_input: Any, thread: str, pending: list[Any] | None = None) -> Assessment:
        started = time.perf_counter()
        settings = RunSettings.from_config(self.config)
        run_config: dict[str, Any] = {"recursion_limit": 4 * settings.max_steps + 20}
        if self.reviewer is not None:
            run_config["configurable"] = {"thread_id": thread}
        state: dict[str, Any] = dict(graph_input or {})
        with track_usage() as usage:
            try:
                async with self._run_graph() as graph:
                    if pending:
                        result, interrupts = state, pending
                    else:
                        result, interrupts = await self._stream(graph, graph_input, run_config, settings)
                    while self.reviewer is not None and interrupts:
                        answer = await self.reviewer(interrupts[0].value)
                        result, interrupts = await self._stream(graph, Command(resume=answer), run_config, settings)
                state = result
            except ClaireError as error:
                state["errors"] = state.get("errors", []) + [str(error)]
        assessment = self._assessment(claim, state, usage.to_dict(), time.perf_counter() - started)
        if self.reviewer is not None:
            assessment.details["thread_id"] = thread
        return assessment

    async def _stream(self, graph: Any, graph_input: Any, run_config: dict[str, Any],
                      settings: RunSettings) -> tuple[dict[str, Any], list[Any]]:
        """Run the graph, handing each step written to its custom stream to ``on_step``; returns the
        final state and any interrupts it stopped at."""
        state: dict[str, Any] = {}
        interrupts: list[Any] = []
        # Only the streams someone reads: each one costs the graph work at every step.
        modes = ["values"] + (["custom"] if self.on_step is not None else []) + (["updates"] if self.reviewer else [])
        async for mode, chunk in graph.astream(graph_input, run_config, context=settings, stream_mode=modes):
            if mode == "custom":
                if self.on_step is not None:
                    self.on_step(chunk)
            elif mode == "values":
                state = chunk
            elif isinstance(chunk, dict) and "__interrupt__" in chunk:
                interrupts = list(chunk["__interrupt__"])
        return state, interrupts

    def _assessment(self, claim: Claim, state: dict[str, Any], usage: dict[str, Any], latency: float) -> Assessment:
        # A failed research step makes the result unreliable even with a score: it is an error, so
        # metrics leave it out and --retry-errors runs it again. A failed report is only a warning.
        warnings = [e for e in state.get("errors", []) if e.startswith("report:")]
        errors = [e for e in state.get("errors", []) if not e.startswith("report:")]
        assessment = Assessment(
            claim_id=claim.claim_id,
            system=self.name,
            claim_text=claim.text,
            score=state.get("score"),
            threshold=self.config.agent.threshold,
            evidence=[Evidence.model_validate(d) for d in state.get("documents", [])],
            clarifications=state.get("clarifications", []),
            explanations=state.get("explanations", []),
            reported=state.get("reported", []),
            restated_claim=state.get("restated_claim"),
            reasoning=state.get("reasoning"),
            report=state.get("report"),
            details={"steps": state.get("steps", 0), "stop_reason": state.get("stop_reason"), "warnings": warnings},
            trace=[TraceItem.model_validate(item) for item in state.get("trace", [])],
            usage=usage,
            latency_s=round(latency, 3),
            error="; ".join(errors) or (None if state.get("score") is not None or state.get("label") else "no score was produced"),
            label=state.get("label"),
            evidence_elements=state.get("evidence_elements") or [],
        )
        assessment.decide()
        return assessment
