"""The ``finish`` action: the controller's way to end the research and hand over to the verifier."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.tools.results import step_result


@tool
async def finish(runtime: ToolRuntime[Any, Any]) -> Command:
    """Stop researching when you have looked properly and found no contradiction."""
    return step_result(runtime, "finish", "", "Research finished.", stop_reason="the model finished")
