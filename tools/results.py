"""How a tool hands back what it did: a LangGraph ``Command`` whose update carries the
``ToolMessage`` the controller reads next (its content is the observation, its artifact what the
trace records), the step as a trace item, and whatever the tool adds to the research state
(evidence, clarifications, reports, ...)."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from claire.domain import TraceItem


def step_result(runtime: ToolRuntime, name: str, argument: str, observation: str, output: Any = None, *,
                status: str = "success", **update: Any) -> Command:
    """The state update of one finished tool call: the observation for the controller (and
    ``output`` for the trace, the observation itself when not given) plus ``update``."""
    output = observation if output is None else output
    message = ToolMessage(content=observation, artifact=output, name=name, tool_call_id=runtime.tool_call_id or name,
                          status=status)  # type: ignore[arg-type]
    item = TraceItem(action_name=name, action_argument=argument or None, action_output=output,
                     thought=_thought_before(runtime))
    return Command(update={"messages": [message], "trace": [item], **update})


def _thought_before(runtime: ToolRuntime) -> str | None:
    """The thought the controller wrote beside this call (the text of the answer that made it)."""
    for message in reversed(getattr(runtime.state, "messages", None) or []):
        if isinstance(message, AIMessage) and any(call.get("id") == runtime.tool_call_id for call in message.tool_calls):
            text = message.content if isinstance(message.content, str) else ""
            return text.strip() or None
    return None

