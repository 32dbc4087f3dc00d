"""Keeping CLAIRE's own prompts inside the model's context window.

Two prompts grow with the research: the controller's (every observation so far) and the
verifier's and report's (every passage gathered). ``fit_history`` keeps the claim, the
instructions and the latest observations whole and condenses older ones, then leaves the oldest
out; ``fit_documents`` removes duplicate passages, orders the rest by relevance to the claim and
keeps as many as fit with room for the answer. Both return a :class:`FitNote` saying what was
condensed or dropped, which the agent writes into the trace as a ``context_budget`` step.
Passages are anything with ``n``, ``block_id``, ``document_title``, ``section_title`` and
``content`` (:class:`~claire.domain.Evidence`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

Messages = list[Any]
CONDENSED_LINE_CHARS = 110
CONDENSED_TEXT_CHARS = 300
OMITTED = "(left out to fit the model's context window)"
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("the a an of in on at to and or is was were be by for with as from that this it its his her their".split())


@dataclass
class FitNote:
    """What one prompt lost to the budget (step numbers count from 1; passages by their [n])."""

    prompt: str
    budget: int
    tokens: int = 0
    condensed_steps: list[int] = field(default_factory=list)
    omitted_steps: list[int] = field(default_factory=list)
    trimmed_steps: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    trimmed: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the prompt lost anything to the budget."""
        return bool(self.condensed_steps or self.omitted_steps or self.trimmed_steps or self.dropped
                    or self.duplicates or self.trimmed)

    def trace_item(self) -> dict[str, Any]:
        """The note as a ``context_budget`` trace step."""
        output = {key: value for key, value in vars(self).items() if key != "prompt" and value not in ([], None)}
        return {"action_name": "context_budget", "action_argument": self.prompt, "action_output": output}


# -- the controller's history -----------------------------------------------------------------
def condense_observation(observation: str) -> str:
    """A short form of an observation: each search result line cut to its title and section,
    any other text to its opening."""
    lines = observation.splitlines()
    if lines and all(line.startswith("[") for line in lines if line.strip()):
        return "\n".join(line if len(line) <= CONDENSED_LINE_CHARS else line[:CONDENSED_LINE_CHARS] + "…" for line in lines)
    return observation if len(observation) <= CONDENSED_TEXT_CHARS else observation[:CONDENSED_TEXT_CHARS] + "…"


def fit_history(
    render: Callable[[list[dict[str, str]]], Messages],
    history: list[dict[str, str]],
    *,
    count: Callable[[Messages], int],
    budget: int,
    keep_latest: int = 2,
) -> tuple[Messages, FitNote]:
    """Render the controller prompt within ``budget`` tokens: condense the observations older than
    the latest ``keep_latest`` (oldest first), then leave the oldest out, then trim the latest."""
    note = FitNote(prompt="controller", budget=budget)
    messages = render(history)
    note.tokens = count(messages)
    if note.tokens <= budget:
        return messages, note
    steps = [dict(step) for step in history]
    older = range(max(len(steps) - keep_latest, 0))

    def attempt() -> bool:
        nonlocal messages
        messages = render(steps)
        note.tokens = count(messages)
        return note.tokens <= budget

    for i in older:
        condensed = condense_observation(steps[i]["observation"])
        if condensed != steps[i]["observation"]:
            steps[i]["observation"] = condensed
            note.condensed_steps.append(i + 1)
            if attempt():
                return messages, note
    for i in older:
        steps[i]["observation"] = OMITTED
        note.omitted_steps.append(i + 1)
        if i + 1 in note.condensed_steps:
            note.condensed_steps.remove(i + 1)
        if attempt():
            return messages, note
    for i in range(len(older), len(steps)):  # the latest observations alone are too long: trim them
        text = steps[i]["observation"]
        over = note.tokens - budget
        keep = max(int(len(text) * (1 - over / max(count(render([{**steps[i], "observation": text}])), 1))) - 200, 0)
        steps[i]["observation"] = text[:keep] + "…"
        note.trimmed_steps.append(i + 1)
        if attempt():
            return messages, note
    return messages, note  # only the claim and instructions are left: nothing more to cut


# -- the passages for the verifier and report --------------------------------------------------
@lru_cache(maxsize=8192)
def _terms(text: str) -> tuple[str, ...]:
    """The lower-cased words of ``text`` without stop words (remembered: the same passages are
    deduplicated, ranked and fitted several times for one claim, and recur across claims)."""
    return tuple(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _body(doc: Any) -> tuple[str, ...]:
    """The words a passage is ranked by: its title, section and text."""
    return _terms(f"{doc.document_title}") + _terms(f"{doc.section_title}") + _terms(f"{doc.content}")


def deduplicate(documents: list[Any]) -> tuple[list[Any], list[int]]:
    """Passages with a block id or text seen before are left out; returns (kept, their [n])."""
    seen_ids: set[str] = set()
    seen_text: set[str] = set()
    kept, duplicates = [], []
    for doc in documents:
        key = " ".join(_terms(getattr(doc, "content", "")))
        if doc.block_id in seen_ids or (key and key in seen_text):
            duplicates.append(doc.n)
            continue
        seen_ids.add(doc.block_id)
        seen_text.add(key)
        kept.append(doc)
    return kept, duplicates


def by_relevance(claim: str, documents: list[Any]) -> list[Any]:
    """Passages ordered by BM25 (k1 1.2, b 0.75) of the claim's words over the gathered passages;
    ties keep the order the passages were found in."""
    if len(documents) < 2:
        return list(documents)
    query = set(_terms(claim))
    bodies = [_body(d) for d in documents]
    matches = [Counter(w for w in body if w in query) for body in bodies]  # only the claim's words count
    frequency = Counter(term for found in matches for term in found)  # passages holding each word
    average = sum(len(body) for body in bodies) / len(bodies) or 1.0
    total = len(bodies)

    def score(found: Counter[str], length: int) -> float:
        value = 0.0
        for term in query:
            tf = found.get(term)
            if tf:
                idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                value += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        return value

    scores = [score(found, len(body)) for found, body in zip(matches, bodies)]
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
    return [documents[i] for i in order]


def fit_documents(
    render: Callable[[list[Any]], Messages],
    documents: list[Any],
    *,
    claim: str,
    count: Callable[[Messages], int],
    budget: int,
    prompt: str = "verifier",
) -> tuple[list[Any], Messages, FitNote]:
    """The passages to show, de-duplicated, most relevant first and cut to ``budget`` tokens, with
    the rendered prompt. A passage too long to fit even alone is shortened."""
    note = FitNote(prompt=prompt, budget=budget)
    unique, note.duplicates = deduplicate(documents)
    ordered = by_relevance(claim, unique)
    messages = render(ordered)
    note.tokens = count(messages)
    if note.tokens <= budget:  # the usual case: everything fits, one render is enough
        note.kept = [doc.n for doc in ordered]
        return ordered, messages, note
    base = count(render([]))
    room = budget - base
    chosen: list[Any] = []
    used = 0
    for doc in ordered:
        cost = count(render([doc])) - base
        if cost > room and not chosen and room > 200:  # the best passage alone is too long: shorten it
            share = max(int(len(doc.content) * (room - 100) / cost), 0)
            doc = doc.model_copy(update={"content": doc.content[:share] + "…"})
            cost = count(render([doc])) - base
            note.trimmed.append(doc.n)
        if used + cost <= room:
            chosen.append(doc)
            used += cost
        else:
            note.dropped.append(doc.n)
    messages = render(chosen)
    note.tokens = count(messages)
    while chosen and note.tokens > budget:  # per-passage costs are close, not exact: settle it
        note.dropped.append(chosen.pop().n)
        messages = render(chosen)
        note.tokens = count(messages)
    note.kept = [doc.n for doc in chosen]
    note.dropped.sort()
    return chosen, messages, note
