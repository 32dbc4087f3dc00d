"""The agent's actions in one place: each tool by name, in the order the controller is shown
them, and what the text-action fallback (``name(argument)``) needs to know of each.

The names are listed here once (the configuration reads them at startup without loading any
tool); each tool is the ``@tool`` function of the same name in the module of the same name,
loaded on first use by :func:`all_tools`.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

ACTIONS: tuple[str, ...] = ("search", "clarify_entity", "explain", "report_inconsistency", "finish")
"""Every action the controller can take, in the order it is shown them."""

TOOL_NAMES: tuple[str, ...] = ACTIONS[:-1]
"""The tools ``agent.tools`` may enable (``finish`` is offered by ``agent.finish_action``)."""

OPTIONAL_TOOLS: tuple[str, ...] = ("clarify_entity", "explain")
"""The tools a run may leave out: search and report_inconsistency are the core of the method."""


@cache
def all_tools() -> dict[str, "BaseTool"]:
    """Every action's tool, by name, in the order the controller is shown them."""
    return {name: getattr(import_module(f"claire.tools.{name}"), name) for name in ACTIONS}


def tools_for(enabled: list[str], *, finish: bool = True) -> list["BaseTool"]:
    """The enabled tools in their fixed order, ending with ``finish`` when it is offered."""
    return [tool for name, tool in all_tools().items() if name in enabled or (name == "finish" and finish)]


def argument_of(name: str) -> str:
    """The one argument a tool takes (``query`` for search), or "" for none or an unknown tool."""
    tool = all_tools().get(name)
    return next(iter(tool.args), "") if tool is not None else ""
