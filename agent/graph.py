"""CLAIRE as a LangGraph state machine, compiled once:

    START -> controller -> (tools | controller | verifier | END: its first LLM call failed)
    tools -> (controller | verifier)
    verifier -> (report | review | END);  report -> (review | END);  review -> (controller | END)

The controller picks one action per step; the tools node (LangGraph's ``ToolNode`` over every
tool of ``claire.tools.registry``) runs it; the verifier turns everything gathered into the
task's verdict. The step budget is enforced by the controller, not by LangGraph's recursion
limit. In interactive runs a flagged verdict pauses the graph (``interrupt``) with the whole case
— the passages cited, the verifier's analysis, what the agent reported, the two-sided report —
until a person confirms the contradiction or rejects it. A rejection with a comment, while steps
remain, is the paper's human-feedback loop: the comment becomes the controller's next
observation and the research goes on (a new verdict, and a new review if it is flagged again).
Those runs compile the same graph with a checkpointer (:func:`compile_research`) so a review can be
resumed from another process.
"""

from __future__ import annotations

from typing import Any

import re

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from claire.agent.controller import REVIEWER, controller, steps_taken
from claire.agent.state import ResearchContext, ResearchState
from claire.agent.verifier import verifier, write_report
from claire.errors import ClaireError
from claire.domain import TraceItem, outcome
from claire.tools.registry import all_tools
from claire.tools.results import step_result


async def _tool_failures(request: ToolCallRequest, execute: Any) -> Any:
    """A tool that fails with a CLAIRE error (its search or LLM call) becomes an observation that
    says so, and an error of the run; the research goes on."""
    try:
        return await execute(request)
    except ClaireError as error:
        name = request.tool_call["name"]
        argument = str(next(iter((request.tool_call.get("args") or {}).values()), ""))
        return step_result(request.runtime, name, argument, f"The {name} tool failed: {error}", status="error",
                           errors=[f"{name}: {error}"])


def after_tools(state: ResearchState) -> str:
    """Where the research goes after an action: the verifier once it is over, else the next step."""
    return "verifier" if state.stop_reason else "controller"


def flagged(state: ResearchState, context: ResearchContext) -> bool:
    """Whether the verdict says the claim is contradicted (a score above the threshold, or REFUTES)."""
    verdict = state.verdict
    if verdict is None:
        return False
    if verdict.label is not None:  # a task that answers with labels (FEVEROUS): REFUTES flags
        return verdict.label == "REFUTES"
    return outcome(verdict.score, context.threshold, "probability", verdict.error) == "flagged"


def review_case(state: ResearchState) -> dict[str, Any]:
    """What a person reviewing a flagged verdict is shown: the claim, the score, the verifier's
    analysis, what the agent reported, the two-sided report and the passages these cite [n]."""
    verdict = state.verdict
    analysis = verdict.analysis if verdict is not None else None
    texts = [analysis or "", *state.reports, *(state.report or {}).values()]
    cited = list(dict.fromkeys(int(n) for text in texts for n in re.findall(r"\[(\d+)\]", text)))
    by_n = {item.n: item for item in state.evidence}
    passages = [by_n[n] for n in cited if n in by_n] or state.evidence[:2]
    return {"claim": state.claim.text, "score": verdict.score if verdict else None, "label": verdict.label if verdict else None,
            "analysis": analysis, "reports": list(state.reports), "report": state.report,
            "passages": [{key: getattr(item, key) for key in ("n", "document_title", "section_title", "content", "url")}
                         for item in passages]}


def ask_reviewer(state: ResearchState, runtime: Runtime[ResearchContext]) -> dict[str, Any]:
    """Pause until a person decides on the flagged verdict: ``{"decision": "accept" | "reject",
    "comment"}`` (accept: the contradiction is confirmed; reject: it is not a contradiction). A
    rejection with a comment, while steps remain, sends the comment to the controller and the
    research on (the verdict and report are made again)."""
    answer = interrupt(review_case(state))
    if not isinstance(answer, dict):  # a bare word, or an answer saved by an older version
        word = str(answer).strip().lower()
        answer = {"decision": "reject" if word.startswith(("r", "n")) else "accept", "comment": None}
    decision = {"decision": "reject" if answer.get("decision") == "reject" else "accept",
                "comment": answer.get("comment") or None}
    verdict = state.verdict
    argument = f"score {verdict.score}" if verdict is not None and verdict.score is not None else (verdict.label if verdict else None)
    if decision["decision"] == "reject" and decision["comment"] and steps_taken(state.messages) < runtime.context.max_steps:
        decision["continued"] = True
        feedback = HumanMessage(content=f"A person reviewing the flagged verdict says it is not a contradiction: "
                                        f"{decision['comment']}", name=REVIEWER)
        return {"review": decision, "messages": [feedback], "verdict": None, "report": None, "stop_reason": None,
                "trace": [TraceItem(action_name="human_review", action_argument=argument, action_output=decision)]}
    return {"review": decision, "trace": [TraceItem(action_name="human_review", action_argument=argument,
                                                    action_output=decision)]}


def after_review(state: ResearchState) -> str:
    """Back to the research after feedback that sent it on (the verdict was set aside), else the end."""
    return "controller" if state.verdict is None else END


def after_verifier(state: ResearchState, runtime: Runtime[ResearchContext]) -> str:
    """The two-sided report follows a verdict when the run asks for it; then a person's review of a flagged one."""
    if runtime.context.report and state.verdict is not None and state.verdict.score is not None:
        return "write_report"
    return after_report(state, runtime)


def after_report(state: ResearchState, runtime: Runtime[ResearchContext]) -> str:
    """A person reviews a flagged verdict in interactive runs."""
    return "ask_reviewer" if runtime.context.review and flagged(state, runtime.context) else END


def build_research() -> StateGraph:
    """The research graph, not yet compiled."""
    graph = StateGraph(ResearchState, context_schema=ResearchContext)
    graph.add_node("controller", controller, destinations=("tools", "controller", "verifier", END))
    graph.add_node("tools", ToolNode(list(all_tools().values()), awrap_tool_call=_tool_failures))
    graph.add_node("verifier", verifier)
    graph.add_node("write_report", write_report)
    graph.add_node("ask_reviewer", ask_reviewer)
    graph.add_edge(START, "controller")
    graph.add_conditional_edges("tools", after_tools, ["controller", "verifier"])
    graph.add_conditional_edges("verifier", after_verifier, ["write_report", "ask_reviewer", END])
    graph.add_conditional_edges("write_report", after_report, ["ask_reviewer", END])
    graph.add_conditional_edges("ask_reviewer", after_review, ["controller", END])
    return graph


def compile_research(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The research graph compiled (with a checkpointer for interactive runs)."""
    return build_research().compile(checkpointer=checkpointer)


RESEARCH = compile_research()
"""The compiled graph every batch run and the web app share."""
