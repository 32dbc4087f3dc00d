"""CLAIRE as a LangGraph state machine: a controller picks one action per step, the tools node
runs it, and the verifier turns everything gathered into an inconsistency score.

    START -> controller -> tools -> (controller | review | verifier) ... verifier -> (report) -> END

The step budget is enforced by the graph (the controller hands over to the verifier when it is
spent), not by LangGraph's recursion limit. In interactive runs a reported inconsistency pauses
the graph (``interrupt``) until a person accepts, rejects or comments on it.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Awaitable, Callable, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from claire.agent.actions import Action, read_action
from claire.agent.llm import LLMClient
from claire.agent.system import Assessment, Claim, Evidence, TraceItem
from claire.agent.usage import track_usage
from claire.agent.verifier import two_sided_report, verify
from claire.config import Config
from claire.errors import ClaireError
from claire.prompts import PromptLibrary
from claire.tools.clarify_entity import clarify_entity
from claire.tools.explain import explain
from claire.tools.report_inconsistency import report_inconsistency
from claire.tools.search import SearchTool
from claire.tools.specs import specs_for

StepListener = Callable[[dict[str, Any]], None]
Reviewer = Callable[[dict[str, Any]], Awaitable[str]]
SNIPPET_CHARS = 400


class ResearchState(TypedDict, total=False):
    claim: dict[str, Any]
    steps: int
    history: list[dict[str, str]]  # {action, argument, observation} as the controller sees them
    documents: list[dict[str, Any]]  # Evidence dumps, numbered in first-seen order
    clarifications: list[dict[str, str]]
    explanations: list[dict[str, str]]
    reported: list[str]
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
    trace: list[dict[str, Any]]
    errors: list[str]


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
        self.graph = self._build().compile(checkpointer=InMemorySaver() if self.reviewer else None)

    # -- graph -----------------------------------------------------------------------------
    def _build(self) -> StateGraph:
        graph = StateGraph(ResearchState)
        graph.add_node("controller", self._controller)
        graph.add_node("tools", self._tools)
        graph.add_node("review", self._review)
        graph.add_node("verifier", self._verifier)
        graph.add_node("report", self._report)
        graph.add_edge(START, "controller")
        graph.add_conditional_edges("controller", self._after_controller, ["tools", "verifier"])
        graph.add_conditional_edges("tools", self._after_tools, ["controller", "review", "verifier"])
        graph.add_edge("review", "controller")
        graph.add_conditional_edges("verifier", self._after_verifier, ["report", END])
        graph.add_edge("report", END)
        return graph

    def _emit(self, state: ResearchState, item: dict[str, Any], **extra: Any) -> None:
        if self.on_step:
            self.on_step({"item": item, "steps": state.get("steps", 0), "documents": len(state.get("documents", [])), **extra})

    def _claim(self, state: ResearchState) -> Claim:
        return Claim.model_validate(state["claim"])

    async def _controller(self, state: ResearchState) -> dict[str, Any]:
        steps_left = self.config.agent.max_steps - state.get("steps", 0)
        if steps_left <= 0:
            item = {"action_name": "budget_exhausted", "action_argument": None,
                    "action_output": f"the step budget of {self.config.agent.max_steps} is spent"}
            self._emit(state, item)
            return {"pending": None, "stop_reason": "step budget spent", "trace": state.get("trace", []) + [item]}
        claim = self._claim(state)
        messages = self.prompts.render(
            "controller",
            claim=claim.text,
            context=claim.context.model_dump(),
            tools=[{"name": s.name, "argument": s.argument, "description": s.description} for s in self.specs if s.name != "finish"],
            history=state.get("history", []),
            steps_left=steps_left,
            text_actions=not self.native,
        )
        try:
            if self.native:
                response = await self.llm.chat(messages, tools=[s.openai_schema() for s in self.specs], tool_choice="auto")
            else:
                response = await self.llm.chat(messages)
        except ClaireError as error:
            return {"pending": None, "stop_reason": "LLM error in the controller",
                    "errors": state.get("errors", []) + [f"controller: {error}"]}
        action = read_action(response, self.allowed)
        return {"pending": {"name": action.name, "argument": action.argument, "problem": action.problem}}

    def _after_controller(self, state: ResearchState) -> str:
        return "tools" if state.get("pending") else "verifier"

    async def _tools(self, state: ResearchState) -> dict[str, Any]:
        action = Action(**state["pending"])  # type: ignore[arg-type]
        claim = self._claim(state)
        update: dict[str, Any] = {
            "documents": list(state.get("documents", [])),
            "clarifications": list(state.get("clarifications", [])),
            "explanations": list(state.get("explanations", [])),
            "reported": list(state.get("reported", [])),
            "errors": list(state.get("errors", [])),
        }
        output: Any
        finished = False
        repeated = next((h for h in state.get("history", []) if (h["action"], h["argument"]) == (action.name, action.argument)), None)
        if action.problem:
            observation = output = f"Invalid action: {action.problem}."
        elif repeated is not None and action.name != "finish":
            observation = output = (f"You already ran {action.name}({action.argument}); its result is in step "
                                    f"{state['history'].index(repeated) + 1} above. Choose a different action.")
        else:
            try:
                observation, output, finished = await self._run_tool(action, claim, update)
            except ClaireError as error:
                observation = output = f"The {action.name} tool failed: {error}"
                update["errors"].append(f"{action.name}: {error}")
        item = {"action_name": action.name, "action_argument": action.argument or None, "action_output": output}
        update.update(
            awaiting_review=self.reviewer is not None and len(update["reported"]) > len(state.get("reported", [])),
            steps=state.get("steps", 0) + 1,
            history=state.get("history", []) + [{"action": action.name, "argument": action.argument, "observation": observation}],
            trace=state.get("trace", []) + [item],
            finished=finished,
        )
        if finished:
            update["stop_reason"] = "the model finished" if action.name == "finish" else "an inconsistency was reported"
        self._emit({**state, **update}, item, observation=observation)
        return update

    async def _run_tool(self, action: Action, claim: Claim, update: dict[str, Any]) -> tuple[str, Any, bool]:
        """Run one valid action; returns (observation for the controller, trace output, finished)."""
        agent = self.config.agent
        if action.name == "search":
            hits = await self.search_tool.search(action.argument, exclude_title=claim.context.document_title or None, k=agent.docs_per_query)
            if not hits:
                return "No passages found for this query. Try other words or another angle.", [], False
            lines, passages = [], []
            for hit in hits:
                known = next((d for d in update["documents"] if d["block_id"] == hit.block.id), None)
                if known is None:
                    known = evidence_from_hit(hit, len(update["documents"]) + 1).model_dump()
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
                k=agent.clarify_k, exclude_title=claim.context.document_title or None,
            )
            update["clarifications"].append({"entity": action.argument, "text": note})
            return note, note, False
        if action.name == "explain":
            note = await explain(action.argument, claim=claim.text, llm=self.llm, prompts=self.prompts)
            update["explanations"].append({"topic": action.argument, "text": note})
            return note, note, False
        if action.name == "report_inconsistency":
            stops = agent.stop_on_report and self.reviewer is None
            observation = report_inconsistency(action.argument, update["reported"], stops_research=stops)
            return observation, observation, stops
        return "Research finished.", None, True  # finish

    def _after_tools(self, state: ResearchState) -> str:
        if state.get("awaiting_review"):
            return "review"
        return "verifier" if state.get("finished") else "controller"

    async def _review(self, state: ResearchState) -> dict[str, Any]:
        answer = interrupt({"claim": state["claim"]["text"], "evidence": state["reported"][-1]})
        observation = f"The human reviewer answered: {answer}"
        history = list(state["history"])
        history[-1] = {**history[-1], "observation": history[-1]["observation"] + "\n" + observation}
        item = {"action_name": "human_review", "action_argument": state["reported"][-1], "action_output": str(answer)}
        self._emit(state, item)
        return {"history": history, "trace": state["trace"] + [item], "awaiting_review": False}

    async def _verifier(self, state: ResearchState) -> dict[str, Any]:
        claim = self._claim(state)
        documents = [Evidence.model_validate(d) for d in state.get("documents", [])]
        clarifications = state.get("clarifications", [])
        try:
            verdict = await verify(claim, documents=documents, clarifications=clarifications, llm=self.llm, prompts=self.prompts,
                                   task=self.config.agent.task)
        except ClaireError as error:
            return {"score": None, "errors": state.get("errors", []) + [f"verifier: {error}"]}
        item = {"action_name": "verifier", "action_argument": None,
                "action_output": {"inconsistency_score": verdict.score, "analysis": verdict.analysis}}
        if verdict.label is not None:
            item["action_output"].update(label=verdict.label, evidence=verdict.evidence_elements)
        self._emit(state, item)
        errors = state.get("errors", []) + ([f"verifier: {verdict.error}"] if verdict.error else [])
        return {"score": verdict.score, "label": verdict.label, "evidence_elements": verdict.evidence_elements,
                "restated_claim": verdict.restated_claim, "reasoning": verdict.analysis, "trace": state.get("trace", []) + [item], "errors": errors}

    def _after_verifier(self, state: ResearchState) -> str:
        return "report" if self.config.agent.report and state.get("score") is not None else END

    async def _report(self, state: ResearchState) -> dict[str, Any]:
        claim = self._claim(state)
        documents = [Evidence.model_validate(d) for d in state.get("documents", [])]
        try:
            report = await two_sided_report(claim, documents=documents, clarifications=state.get("clarifications", []),
                                            llm=self.llm, prompts=self.prompts)
        except ClaireError as error:
            return {"errors": state.get("errors", []) + [f"report: {error}"]}
        return {"report": report}

    # -- System interface ------------------------------------------------------------------
    async def assess(self, claim: Claim) -> Assessment:
        started = time.perf_counter()
        state: dict[str, Any] = {"claim": claim.model_dump(), "steps": 0, "history": [], "documents": [], "trace": [], "errors": []}
        run_config: dict[str, Any] = {"recursion_limit": 4 * self.config.agent.max_steps + 20}
        if self.reviewer is not None:
            run_config["configurable"] = {"thread_id": f"{claim.claim_id}-{uuid.uuid4().hex[:8]}"}
        with track_usage() as usage:
            try:
                result = await self.graph.ainvoke(state, run_config)
                while self.reviewer is not None and result.get("__interrupt__"):
                    answer = await self.reviewer(result["__interrupt__"][0].value)
                    result = await self.graph.ainvoke(Command(resume=answer), run_config)
                state = result
            except ClaireError as error:
                state["errors"] = state.get("errors", []) + [str(error)]
        return self._assessment(claim, state, usage.to_dict(), time.perf_counter() - started)

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
