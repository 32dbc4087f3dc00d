"""The agent's actions in one place: each tool by name, in the order the controller is shown
them, and what the text-action fallback (``name(argument)``) needs to know of each."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from claire.tools.clarify_entity import clarify_entity
from claire.tools.explain import explain
from claire.tools.finish import finish
from claire.tools.report_inconsistency import report_inconsistency
from claire.tools.search import search

TOOLS: dict[str, BaseTool] = {tool.name: tool for tool in (search, clarify_entity, explain, report_inconsistency, finish)}
"""Every action the controller can take, by name, in the order it is shown them."""


def tools_for(enabled: list[str], *, finish: bool = True) -> list[BaseTool]:
    """The enabled tools in their fixed order, ending with ``finish`` when it is offered."""
    return [tool for name, tool in TOOLS.items() if name in enabled or (name == "finish" and finish)]


def argument_of(name: str) -> str:
    """The one argument a tool takes (``query`` for search), or "" for none or an unknown tool."""
    tool = TOOLS.get(name)
    return next(iter(tool.args), "") if tool is not None else ""
