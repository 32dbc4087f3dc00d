"""Reading the controller's chosen action from a model answer: a native tool call, or — for
endpoints without tool calling, or models that write the call as text — ``name(argument)``
or a JSON object ``{"name": ..., "arguments": {...}}`` in the content. The action is checked
against the enabled tools; a problem (no action, an unknown or disabled tool, unusable
arguments, a missing argument) is said in words the model can act on.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

from langchain_core.messages import AIMessage

from claire.llm.answers import text_of
from claire.tools.registry import TOOLS, argument_of


@dataclass
class Action:
    """The action an answer chose: a tool name and its one argument, or what was wrong with it."""

    name: str
    argument: str
    problem: str | None = None  # set when the answer was not a valid action
    call_id: str | None = None  # the model's id for a native tool call


_CALL = re.compile(r"\b([a-z_]+)\s*\((.*?)\)\s*$", re.MULTILINE | re.DOTALL)
_KEYWORD = re.compile(r"^\s*[a-z_]+\s*=\s*(.*)$", re.DOTALL)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_QUOTES = "\"'“”‘’`"


def _clean_argument(raw: str) -> str:
    raw = raw.strip()
    keyword = _KEYWORD.match(raw)
    if keyword and not raw.startswith(tuple(_QUOTES)):
        raw = keyword.group(1).strip()
    if len(raw) >= 2 and raw[0] in _QUOTES and raw[-1] in _QUOTES:
        raw = raw[1:-1]
    return raw.strip()


def _argument_from_dict(name: str, arguments: dict) -> str:
    wanted = argument_of(name)
    if wanted and wanted in arguments:
        return str(arguments[wanted])
    values = [str(v) for v in arguments.values() if v not in (None, "")]
    return values[0] if values else ""


def _from_json(text: str) -> tuple[str, str] | None:
    for match in _JSON_OBJECT.finditer(text):
        try:
            data = json.loads(match.group())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            arguments = data.get("arguments") or data.get("parameters") or {}
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    arguments = {"value": arguments}
            return data["name"], _argument_from_dict(data["name"], arguments if isinstance(arguments, dict) else {})
    return None


def parse_text_action(text: str) -> tuple[str, str] | None:
    """The last ``name(argument)`` in the text whose name is a known action, else a JSON call."""
    text = html.unescape(text or "")
    calls = [(name, arg) for name, arg in _CALL.findall(text) if name in TOOLS]
    if calls:
        name, raw = calls[-1]
        return name, _clean_argument(raw)
    return _from_json(text)


def read_action(answer: AIMessage, allowed: list[str]) -> Action:
    """The one action in a model answer (its first tool call, else a call written in its text),
    checked against the enabled tools."""
    valid = ", ".join(f"{name}()" for name in allowed)
    call_id = None
    if answer.tool_calls:
        call = answer.tool_calls[0]
        call_id = call.get("id")
        found: tuple[str, str] | None = (call["name"], _argument_from_dict(call["name"], call.get("args") or {}))
    elif answer.invalid_tool_calls:
        call = answer.invalid_tool_calls[0]
        name = call.get("name") or ""
        return Action(name, str(call.get("args") or ""), f"the arguments of {name} were not valid JSON", call.get("id"))
    else:
        found = parse_text_action(text_of(answer))
    if found is None:
        return Action("invalid", text_of(answer).strip()[:300], f"no action found; choose one of: {valid}")
    name, argument = found
    if name not in allowed:
        return Action(name, argument, f"'{name}' is not an available action; choose one of: {valid}", call_id)
    if argument_of(name) and not argument.strip():
        return Action(name, argument, f"{name} needs its argument ({argument_of(name)})", call_id)
    return Action(name, argument.strip(), None, call_id)
