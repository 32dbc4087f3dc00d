"""What real models emit, for :class:`~claire.testing.mock_openai.MockOpenAIServer`: a quirks mode.

:func:`quirky` wraps a responder that answers every prompt in exactly the asked-for format (such as
:func:`claire.testing.doubles.http_responder`) so that some of its answers come the way real models
write them. Each quirk names what it changes, which prompt kinds it touches and how many times; the
answers after that come clean again, which shows whether CLAIRE recovers (a lenient read, a
re-ask) or ends the claim with a clear error. The quirks, as seen from small open models and
hosted ones alike:

- ``think``: reasoning in ``<think>...</think>`` before every answer (with a decoy score inside);
- ``reasoning_only``: a verifier answer that is all reasoning, with no answer after it;
- ``reasoning_field``: the reasoning in a ``reasoning_content`` field beside the content;
- ``text_tool_calls``: the controller's tool calls written as JSON in the text (``<tool_call>``);
- ``malformed_arguments``: tool-call arguments cut short (not JSON);
- ``wrong_types``: a list where a string belongs (``{"query": ["a", "b"]}``);
- ``unknown_tool``: a tool that does not exist (``browse_internet``), once;
- ``tool_name_case``: a tool name in another case and spelling (``Search``, ``Report-Inconsistency``);
- ``parallel_calls``: two searches in one answer;
- ``length``: a verifier answer cut at the token limit mid-number (``finish_reason: length``);
- ``empty``: empty verifier answers;
- ``refusal``: every verifier answer declines (OpenAI's ``refusal`` field);
- ``score_fraction``: the score as ``9/10``; ``score_words``: the score as ``high``;
- ``label_language``: NLI labels in lower case and in French or German;
- ``plain_text_final``: after its first search the controller answers in prose, with no tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from claire.testing.doubles import first_step, kind_of

Responder = Callable[[dict[str, Any]], dict[str, Any]]
Change = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def _think(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    decoy = "Maybe <inconsistency_score>0.0</inconsistency_score>? Let me look again."
    return {**item, "content": f"<think>The user wants a careful answer. {decoy}</think>\n" + (item.get("content") or "")}


def _reasoning_only(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {**item, "content": "<think>I compare the fact with passage [1], which gives another year"}


def _reasoning_field(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {**item, "reasoning": "First I read every passage, then I decide."}


def _text_tool_calls(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    calls = item.get("tool_calls") or []
    written = "".join(f"<tool_call>\n{json.dumps({'name': c['name'], 'arguments': c['arguments']})}\n</tool_call>" for c in calls)
    return {"content": f"I will call a tool.\n{written}"} if calls else item


def _malformed(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    calls = [{**c, "arguments": json.dumps(c["arguments"])[:-2]} for c in item.get("tool_calls") or []]
    return {**item, "tool_calls": calls} if calls else item


def _wrong_types(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    calls = [{**c, "arguments": {k: v.split(" ", 1) if isinstance(v, str) and " " in v else v for k, v in c["arguments"].items()}}
             for c in item.get("tool_calls") or []]
    return {**item, "tool_calls": calls} if calls else item


def _unknown_tool(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "browse_internet", "arguments": {"url": "https://en.wikipedia.org"}}]}


def _name_case(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    spelt = {"search": "Search", "report_inconsistency": "Report-Inconsistency", "finish": "FINISH"}
    calls = [{**c, "name": spelt.get(c["name"], c["name"])} for c in item.get("tool_calls") or []]
    return {**item, "tool_calls": calls} if calls else item


def _parallel(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    calls = item.get("tool_calls") or []
    if calls and calls[0]["name"] == "search":
        return {**item, "tool_calls": calls + [{"name": "search", "arguments": {"query": "World's Fair Paris entrance arch"}}]}
    return item


def _length(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    content = item.get("content") or ""
    cut = re.sub(r"(<inconsistency_score>\d?\.?).*", r"\1", content, flags=re.S)
    return {**item, "content": cut, "finish_reason": "length"}


def _empty(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {"content": ""}


def _refusal(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {"content": "", "refusal": "I'm sorry, but I can't help with that request."}


def _score_text(written: str) -> Change:
    def change(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        content = re.sub(r"<inconsistency_score>.*?</inconsistency_score>",
                         f"<inconsistency_score>{written}</inconsistency_score>", item.get("content") or "")
        return {**item, "content": content}
    return change


def _label_language(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    content = (item.get("content") or "").replace("<label>REFUTES</label>", "<label>réfute</label>")
    content = content.replace("<label>NOT ENOUGH INFO</label>", "<label>nicht genug Informationen</label>")
    return {**item, "content": content.replace("SUPPORTS", "supports")}


def _plain_text(item: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    user = body["messages"][-1]["content"]
    if first_step(user):
        return item
    return {"content": "Based on my research, passage [1] gives 1889 for the completion, so the fact looks wrong."}


@dataclass(frozen=True)
class Quirk:
    """One way real models answer: what it changes, on which prompt kinds, how many times
    (0: every time)."""

    change: Change
    kinds: tuple[str, ...]
    times: int = 1


QUIRKS: dict[str, Quirk] = {
    "think": Quirk(_think, ("controller", "verifier", "nli", "clarify", "explain"), times=0),
    "reasoning_only": Quirk(_reasoning_only, ("verifier",)),
    "reasoning_field": Quirk(_reasoning_field, ("controller", "verifier", "nli"), times=0),
    "text_tool_calls": Quirk(_text_tool_calls, ("controller",), times=0),
    "malformed_arguments": Quirk(_malformed, ("controller",)),
    "wrong_types": Quirk(_wrong_types, ("controller",)),
    "unknown_tool": Quirk(_unknown_tool, ("controller",)),
    "tool_name_case": Quirk(_name_case, ("controller",), times=0),
    "parallel_calls": Quirk(_parallel, ("controller",)),
    "length": Quirk(_length, ("verifier",)),
    "empty": Quirk(_empty, ("verifier",), times=2),
    "refusal": Quirk(_refusal, ("verifier",), times=0),
    "score_fraction": Quirk(_score_text("9/10"), ("verifier",), times=0),
    "score_words": Quirk(_score_text("high"), ("verifier",), times=0),
    "label_language": Quirk(_label_language, ("nli",), times=0),
    "plain_text_final": Quirk(_plain_text, ("controller",), times=0),
}
"""Every quirk by name."""


def quirky(responder: Responder, *names: str) -> Responder:
    """``responder`` with the named quirks applied (each to its prompt kinds, its number of times)."""
    quirks = [(name, QUIRKS[name]) for name in names]
    used = {name: 0 for name in names}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        item = responder(body)
        kind = kind_of(body)
        for name, quirk in quirks:
            if kind in quirk.kinds and (quirk.times == 0 or used[name] < quirk.times):
                used[name] += 1
                item = quirk.change(item, body)
        return item

    return respond
