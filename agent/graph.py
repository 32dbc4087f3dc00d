"""CLAIRE as a LangGraph state machine, compiled once:

    START -> controller -> (tools | controller | verifier | END: its first LLM call failed)
    tools -> (controller | review | verifier);  review -> controller
    verifier -> (report | END);  report -> END

The controller picks one action per step; the tools node (LangGraph's ``ToolNode`` over every
tool of ``claire.tools.registry``) runs it; the verifier turns everything gathered into the
task's verdict. The step budget is enforced by the controller, not by LangGraph's recursion
limit. In interactive runs a reported inconsistency pauses the graph (``interrupt``) until a
person accepts, rejects or comments on it; those runs compile the same graph with a checkpointer
(:func:`compile_research`) so a review can be resumed from another process.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from claire.agent.controller import REVIEWER, controller
from claire.agent.state import ResearchContext, ResearchState
from claire.agent.verifier import report, verifier
from claire.errors import ClaireError
from claire.domain import TraceItem
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
    """Where the research goes after an action: a person's review, the verifier, or the next step."""
    if state.awaiting_review:
        return "review"
    return "verifier" if state.stop_reason else "controller"


async def review(state: ResearchState) -> dict[str, Any]:
    """Pause until a person answers the latest report; the answer becomes the next observation."""
    evidence = state.reports[-1]
    answer = interrupt({"claim": state.claim.text, "evidence": evidence})
    item = TraceItem(action_name="human_review", action_argument=evidence, action_output=str(answer))
    return {"messages": [HumanMessage(content=f"The human reviewer answered: {answer}", name=REVIEWER)],
            "trace": [item], "awaiting_review": False}


def after_verifier(state: ResearchState, runtime: Runtime[ResearchContext]) -> str:
    """The two-sided report follows a verdict when the run asks for it."""
    return "report" if runtime.context.report and state.verdict is not None and state.verdict.score is not None else END


def build_research() -> StateGraph:
    """The research graph, not yet compiled."""
    graph = StateGraph(ResearchState, context_schema=ResearchContext)
    graph.add_node("controller", controller, destinations=("tools", "controller", "verifier", END))
    graph.add_node("tools", ToolNode(list(all_tools().values()), awrap_tool_call=_tool_failures))
    graph.add_node("review", review)
    graph.add_node("verifier", verifier)
    graph.add_node("report", report)
    graph.add_edge(START, "controller")
    graph.add_conditional_edges("tools", after_tools, ["controller", "review", "verifier"])
    graph.add_edge("review", "controller")
    graph.add_conditional_edges("verifier", after_verifier, ["report", END])
    graph.add_edge("report", END)
    return graph


def compile_research(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The research graph compiled (with a checkpointer for interactive runs)."""
    return build_research().compile(checkpointer=checkpointer)


RESEARCH = compile_research()
"""The compiled graph every batch run and the web app share."""
