"""The ``report_inconsistency`` tool: record a candidate contradiction and say what happens next."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.tools.context import ToolContext
from claire.tools.results import step_result


@tool(parse_docstring=True)
async def report_inconsistency(evidence: str, runtime: ToolRuntime[ToolContext, Any]) -> Command:
    """Report an inconsistency when you are certain you have found one; a person then reviews it and gives feedback.

    Args:
        evidence: one short sentence that describes the inconsistency
    """
    evidence = evidence.strip()
    if not evidence:
        return step_result(runtime, "report_inconsistency", evidence,
                           "report_inconsistency needs the evidence: a short sentence that describes the inconsistency.")
    context = runtime.context
    if context.stop_on_report:
        observation = "Inconsistency recorded. The research ends here and the evidence goes to the final judgement."
        return step_result(runtime, "report_inconsistency", evidence, observation, reports=[evidence],
                           stop_reason="an inconsistency was reported")
    observation = ("Inconsistency recorded. Keep looking for other places in Wikipedia that could contradict the fact"
                   + (", or call finish() when you are done." if "finish" in runtime.context.tool_names else "."))
    return step_result(runtime, "report_inconsistency", evidence, observation, reports=[evidence])
