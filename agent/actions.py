"""Reading the controller's chosen action from a model answer: a native tool call, or — for
endpoints without tool calling, or models that write the call as text — ``name(argument)``
or a JSON object ``{"name": ..., "arguments": {...}}`` in the content.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

from claire.agent.llm_backends import ChatResponse
from claire.tools.specs import TOOL_SPECS


@dataclass
class Action:
    name: str
    argument: str
    problem: str | None = None  # set when the answer was not a valid action


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
    spec = TOOL_SPECS.get(name)
    if spec and spec.argument in arguments:
        return str(arguments[spec.argument])
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
    calls = [(name, arg) for name, arg in _CALL.findall(text) if name in TOOL_SPECS]
    if calls:
        name, raw = calls[-1]
        return name, _clean_argument(raw)
    return _from_json(text)


def read_action(response: ChatResponse, allowed: list[str]) -> Action:
    """The one action in a model answer, checked against the enabled tools."""
    valid = ", ".join(f"{name}()" for name in allowed)
    if response.tool_calls:
        call = response.tool_calls[0]
        arguments = call.parsed_arguments()
        if arguments is None:
            return Action(call.name, call.arguments, f"the arguments of {call.name} were not valid JSON")
        found: tuple[str, str] | None = (call.name, _argument_from_dict(call.name, arguments))
    else:
        found = parse_text_action(response.content)
    if found is None:
        return Action("invalid", (response.content or "").strip()[:300], f"no action found; choose one of: {valid}")
    name, argument = found
    if name not in allowed:
        return Action(name, argument, f"'{name}' is not an available action; choose one of: {valid}")
    spec = TOOL_SPECS[name]
    if spec.argument and not argument.strip():
        return Action(name, argument, f"{name} needs its argument ({spec.argument})")
    return Action(name, argument.strip())
