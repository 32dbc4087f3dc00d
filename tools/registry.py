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

from claire.settings import register_name_check
from claire.errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

ACTIONS: tuple[str, ...] = ("search", "clarify_entity", "explain", "report_inconsistency", "finish")
"""Every action the controller can take, in the order it is shown them."""

TOOL_NAMES: tuple[str, ...] = ACTIONS[:-1]
"""The tools ``agent.tools`` may enable (``finish`` is offered by ``agent.finish_action``)."""

OPTIONAL_TOOLS: tuple[str, ...] = ("clarify_entity", "explain")
"""The tools a run may leave out: search and report_inconsistency are the core of the method."""


def enabled_tools(names: list[str] | None) -> list[str]:
    """The tools a run uses, in their fixed order: those ``names`` enables (None: every tool), and
    always search and report_inconsistency, the core of the method; an unknown name is a ConfigError."""
    if names is None:
        return list(TOOL_NAMES)
    unknown = [name for name in names if name not in TOOL_NAMES]
    if unknown:
        raise ConfigError(f"unknown tool(s) {unknown}; allowed: {', '.join(TOOL_NAMES)}")
    return [name for name in TOOL_NAMES if name in names or name not in OPTIONAL_TOOLS]


def _check_tools_setting(names: list[str] | None) -> list[str]:
    """``agent.tools``, as :func:`enabled_tools` reads it (a ValueError, for the configuration's message)."""
    try:
        return enabled_tools(names)
    except ConfigError as error:
        raise ValueError(str(error)) from None


register_name_check("agent.tools", _check_tools_setting)


@cache
def all_tools() -> dict[str, "BaseTool"]:
    """Every action's tool, by name, in the order the controller is shown them."""
    return {name: getattr(import_module(f"claire.tools.{name}"), name) for name in ACTIONS}


def tools_for(enabled: list[str] | None, *, finish: bool = True) -> list["BaseTool"]:
    """The enabled tools (see :func:`enabled_tools`) in their fixed order, ending with ``finish``
    when it is offered."""
    names = enabled_tools(enabled)
    return [tool for name, tool in all_tools().items() if name in names or (name == "finish" and finish)]


def argument_of(name: str) -> str:
    """The one argument a tool takes (``query`` for search), or "" for none or an unknown tool."""
    tool = all_tools().get(name)
    return next(iter(tool.args), "") if tool is not None else ""
