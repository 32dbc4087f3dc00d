"""Reading the controller's chosen actions from a model answer: native tool calls, or — for
endpoints without tool calling, or models that write the call as text — ``name(argument)`` or a
JSON object ``{"name": ..., "arguments": {...}}`` in the content (also inside ``<tool_call>``
tags). Real models' slips are repaired where the intent is plain, and each repair is counted
(``usage.record_event``): a tool name in another case or spelling (``Search``,
``search-wikipedia``, ``give_up``), arguments that are malformed JSON or of the wrong type, several
calls at once (each becomes its own step). Every action is checked against the enabled tools; a
problem (an unknown or disabled tool, a missing argument) is said in words the model can act on.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from claire.llm.answers import text_of
from claire.usage import record_event
from claire.tools.registry import ACTIONS, argument_of


@dataclass
class Action:
    """An action an answer chose: a tool name and its one argument, or what was wrong with it."""

    name: str
    argument: str
    problem: str | None = None  # set when the answer was not a valid action
    call_id: str | None = None  # the model's id for a native tool call


_CALL = re.compile(r"\b([A-Za-z_][\w\-]*)\s*\((.*?)\)\s*$", re.MULTILINE | re.DOTALL)
_KEYWORD = re.compile(r"^\s*[a-z_]+\s*=\s*(.*)$", re.DOTALL)
_QUOTES = "\"'“”‘’`"
_PAIR = re.compile(r'"(\w+)"\s*:\s*"((?:[^"\\]|\\.)*)')
# Names models give the actions in their own words, or the names of WikiCollide's original agent.
ALIASES = {
    "search_wikipedia": "search", "search_wikipedia_outside_claim_article": "search", "wikipedia_search": "search",
    "web_search": "search", "find": "search", "lookup": "search",
    "clarify": "clarify_entity", "disambiguate": "clarify_entity", "clarify_entities": "clarify_entity",
    "explain_topic": "explain", "define": "explain",
    "report": "report_inconsistency", "report_contradiction": "report_inconsistency",
    "give_up": "finish", "stop": "finish", "done": "finish", "final_answer": "finish", "end": "finish",
}


def _normalised(name: str) -> str:
    """``ClarifyEntity``, ``clarify-entity`` and ``Clarify Entity`` all as ``clarify_entity``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[\s\-.]+", "_", spaced).strip("_").lower()


def _meant_tool(name: str) -> str | None:
    """The tool ``name`` stands for, written exactly or not (None: no tool)."""
    if name in ACTIONS:
        return name
    plain = _normalised(name)
    return plain if plain in ACTIONS else ALIASES.get(plain)


def canonical_name(name: str) -> str:
    """The tool a model meant by ``name`` (counted as a repair when it was not written exactly)."""
    found = _meant_tool(name)
    if found is None or found == name:
        return name
    record_event("tool_name_fixed")
    return found


def _clean_argument(raw: str) -> str:
    raw = raw.strip()
    keyword = _KEYWORD.match(raw)
    if keyword and not raw.startswith(tuple(_QUOTES)):
        raw = keyword.group(1).strip()
    if len(raw) >= 2 and raw[0] in _QUOTES and raw[-1] in _QUOTES:
        raw = raw[1:-1]
    return raw.strip()


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " ".join(_as_text(v) for v in value if v not in (None, ""))
    if isinstance(value, dict):
        return next((_as_text(v) for v in value.values() if v not in (None, "")), "")
    return "" if value is None else str(value)


def argument_from(name: str, arguments: dict[str, Any]) -> str:
    """The tool's one argument from a call's arguments: its own key when it holds text; otherwise
    the first usable value, turned into text (a list joined, a number written) as a repair."""
    wanted = argument_of(name)
    value = arguments.get(wanted) if wanted else None
    if isinstance(value, str):
        return value
    values = [v for v in ([value] if value not in (None, "") else []) + list(arguments.values()) if v not in (None, "")]
    if not values:
        return ""
    record_event("arguments_fixed")
    return _as_text(values[0])


def lenient_arguments(raw: Any) -> dict[str, Any] | None:
    """Tool-call arguments read leniently: JSON, JSON cut short (closing quote and brace added), or
    ``"key": "value"`` pairs found in the text; None when nothing usable is there."""
    if isinstance(raw, dict):
        return raw
    text = str(raw or "").strip()
    for candidate in (text, text + '"}', text + "}"):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else {"value": value}
    pairs = dict(_PAIR.findall(text))
    if pairs:
        return pairs
    return {"value": text} if text and not text.startswith(("{", "[")) else None


def _json_spans(text: str) -> list[tuple[dict[str, Any], int, int]]:
    """Every JSON object written in the text with where it starts and ends, in order (nested ones
    inside a found object skipped)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        if isinstance(value, dict):
            found.append((value, start, end))
        at = end
    return found


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object written in the text, in order."""
    return [value for value, _, _ in _json_spans(text)]


def _text_calls(text: str) -> list[tuple[str, dict[str, Any] | str]]:
    """Calls written in the text: JSON objects naming a tool (every one), else the last
    ``name(argument)`` whose name is a known action."""
    calls: list[tuple[str, dict[str, Any] | str]] = []
    for data in _json_objects(text):
        name = data.get("name") or data.get("tool") or data.get("action") or data.get("function")
        if isinstance(name, dict):  # {"function": {"name": ..., "arguments": ...}}
            data, name = name, name.get("name")
        if isinstance(name, str) and _meant_tool(name) is not None:
            arguments = data.get("arguments", data.get("parameters", data.get("args", data.get("input", {}))))
            calls.append((name, arguments if isinstance(arguments, dict) else lenient_arguments(arguments) or {}))
    if calls:
        return calls
    written = [(name, raw) for name, raw in _CALL.findall(text) if _meant_tool(name) is not None]
    return [(written[-1][0], _clean_argument(written[-1][1]))] if written else []


def _checked(name: str, argument: str, allowed: list[str], call_id: str | None) -> Action:
    valid = ", ".join(f"{tool}()" for tool in allowed)
    if name not in allowed:
        return Action(name, argument, f"'{name}' is not an available action; choose one of: {valid}", call_id)
    if argument_of(name) and not argument.strip():
        return Action(name, argument, f"{name} needs its argument ({argument_of(name)})", call_id)
    return Action(name, argument.strip(), None, call_id)


def read_actions(answer: AIMessage, allowed: list[str], *, native: bool = True) -> list[Action]:
    """Every action in a model answer, in order: its tool calls (those with unreadable arguments
    repaired when the intent is plain), else the calls written in its text; each checked against
    the enabled tools. An empty list when the answer holds no action at all."""
    raw: list[tuple[str, Any, str | None]] = [(c["name"], c.get("args") or {}, c.get("id")) for c in answer.tool_calls]
    for call in answer.invalid_tool_calls:
        repaired = lenient_arguments(call.get("args"))
        name = call.get("name") or ""
        if repaired is None:
            raw.append((name, None, call.get("id")))
        else:
            record_event("arguments_fixed")
            raw.append((name, repaired, call.get("id")))
    if not raw:
        written = _text_calls(html.unescape(text_of(answer)))
        if written and native:
            record_event("text_tool_call")
        raw = [(name, arguments, None) for name, arguments in written]
    if len(raw) > 1:
        record_event("parallel_calls")
    actions = []
    for name, arguments, call_id in raw:
        name = canonical_name(name)
        if arguments is None:
            actions.append(Action(name, "", f"the arguments of {name} were not valid JSON", call_id))
            continue
        argument = arguments if isinstance(arguments, str) else argument_from(name, arguments)
        actions.append(_checked(name, argument, allowed, call_id))
    return actions


MAX_THOUGHT_CHARS = 1500
"""The longest thought kept in the history (a model that rambles does not fill the context)."""
_THOUGHT_LABEL = re.compile(r"^\s*(?:thought|reasoning|think(?:ing)?)\s*\d*\s*:\s*", re.IGNORECASE)
_TOOL_CALL_TAG = re.compile(r"<\s*tool_call\s*>.*?(?:<\s*/\s*tool_call\s*>|$)", re.IGNORECASE | re.DOTALL)


def thought_of(answer: AIMessage) -> str:
    """The thought an answer wrote before its action (the paper's ReAct thought): its text without
    the action written in it (a ``name(argument)`` line, a JSON call or a ``<tool_call>``) and
    without a leading "Thought:" label; "" when it wrote none."""
    text = _TOOL_CALL_TAG.sub(" ", html.unescape(text_of(answer)))
    for data, start, end in reversed(_json_spans(text)):  # from the end, so earlier spans stay where they are
        if any(key in data for key in ("name", "tool", "action", "function")):
            text = text[:start] + " " + text[end:]
    calls = [match for match in _CALL.finditer(text) if _meant_tool(match.group(1)) is not None]
    if calls:  # the thought ends where the action is written
        text = text[: calls[-1].start()]
    text = _THOUGHT_LABEL.sub("", " ".join(text.split()))
    return text[:MAX_THOUGHT_CHARS].rstrip(" :-")

