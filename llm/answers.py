"""Reading what a model wrote: the content of an answer, the last ``<tag>...</tag>`` in it, a
score in [0, 1] read leniently (0.7, 70%, 7/10, "7 out of 10"), and a three-way NLI label
(SUPPORTS / REFUTES / NOT ENOUGH INFO) read from its tag, its first lines or a synonym.

The LAST tag wins everywhere, so a passage the model quotes earlier (which could contain a
planted tag) cannot decide the result. Answers written with HTML entities (``&lt;tag&gt;``, as
small models sometimes do) are read as if they were plain. What real models add around an answer
(``<think>`` blocks, a cut last word) is set aside by the client before anything here reads it
(:mod:`claire.llm.client`); scores written in words (high, low) and labels in other languages or
cases are read too.
"""

from __future__ import annotations

import html
import re
from typing import Any

from claire.usage import record_event

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_FRACTION = re.compile(rf"({_NUMBER})\s*(?:/|out\s+of)\s*({_NUMBER})", re.IGNORECASE)
_PERCENT = re.compile(rf"({_NUMBER})\s*%")
_PLAIN = re.compile(rf"(?<![\w.]){_NUMBER}(?![\w])")  # a number standing alone: not the 0 of 0x1, nor inside a word
_MINUSES = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"})
HAIR = 1e-6
"""How far outside [0, 1] a score may stray and still be read (as 0 or 1): rounding, never a claim."""

NLI_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_EXACT = re.compile(r"NOT ENOUGH INFO|SUPPORTS|REFUTES")
# English first, then the forms models answering in French, German, Spanish, Italian, Portuguese
# or Chinese use (lower case; a label's case never matters).
_SYNONYMS = [
    ("NOT ENOUGH INFO", re.compile(
        r"not\s*enough|insufficient|unknown|neutral|cannot\s+(?:be\s+)?(?:determined|verified)|\bnei\b|unrelated|"
        r"irrelevant|pas\s+assez|insuffisant|nicht\s+genug|unzureichend|keine\s+ausreichend|no\s+hay\s+suficiente|"
        r"insuficiente|informa[cç][aã]o\s+insuficiente|non\s+abbastanza|信息不足|无法确定|不足", re.I)),
    ("REFUTES", re.compile(
        r"refute|contradict|\bfalse\b|disprove|inconsistent|conflict|r[ée]fut|contredi|widerleg|widerspr|"
        r"refuta|contradi[cz]|smentisc|confuta|反驳|矛盾|驳斥", re.I)),
    ("SUPPORTS", re.compile(
        r"support|entail|confirm|\btrue\b|consistent|agree|soutien|soutient|appuie|st[üu]tzt|unterst[üu]tzt|"
        r"best[äa]tigt|apoya|respalda|sostiene|conferma|supporta|apoia|支持|证实", re.I)),
]
_SCORE_WORDS = [  # a score written in words, most specific first
    (re.compile(r"\bvery\s+high\b", re.I), 0.9),
    (re.compile(r"\bvery\s+low\b|\bnone\b|\bno\s+contradiction\b", re.I), 0.05),
    (re.compile(r"\bhigh\b|\blikely\b", re.I), 0.8),
    (re.compile(r"\bmedium\b|\bmoderate\b|\buncertain\b", re.I), 0.5),
    (re.compile(r"\blow\b|\bunlikely\b", re.I), 0.2),
]
_NEGATED = re.compile(r"\b(?:not|no|never|neither|nor|doesn'?t|isn'?t|cannot|can'?t)\W+(?:\w+\W+){0,2}$", re.I)
_NEGATED_LABEL = re.compile(r"\b(?:NOT|NO|NEVER)\W*$")


def text_of(message: Any) -> str:
    """The text of a chat answer (an AIMessage, whose content may be a list of parts, or a string)."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content or [])


def _tags(text: str, name: str) -> list[str]:
    pattern = rf"<\s*{re.escape(name)}\s*>(.*?)<\s*/\s*{re.escape(name)}\s*>"
    return re.findall(pattern, html.unescape(text or ""), re.IGNORECASE | re.DOTALL)


def tag_text(text: str, name: str) -> str | None:
    """The content of the last ``<name>...</name>`` in ``text`` (stripped), or None."""
    found = _tags(text, name)
    return found[-1].strip() if found else None


def to_score(raw: str) -> float | None:
    """0.7, 70%, 7/10 and "7 out of 10" all read as 0.7; a score in words reads as a fixed value
    (very high 0.9, high 0.8, medium 0.5, low 0.2, very low 0.05; counted as a ``score_words``
    event); anything else outside [0, 1] is unusable (None: asked again) rather than guessed at.
    Only what lies within a hair (:data:`HAIR`) of the range is clamped into it: -1, -0.5, a Unicode
    minus's −0.7 and a hexadecimal 0x1 are unusable, not 0."""
    raw = (raw or "").translate(_MINUSES)
    if match := _FRACTION.search(raw):
        numerator, denominator = float(match.group(1)), float(match.group(2))
        value = numerator / denominator if denominator > 0 else None
    elif match := _PERCENT.search(raw):
        value = float(match.group(1)) / 100
    elif match := _PLAIN.search(raw):
        value = float(match.group())
    else:
        for pattern, worded in _SCORE_WORDS:
            if found := pattern.search(raw):
                if _NEGATED.search(raw[: found.start()]):  # "not likely", "not high": no fixed value
                    return None
                record_event("score_words")
                return worded
        return None
    if value is None or value != value or not (-HAIR <= value <= 1.0 + HAIR):
        return None
    return min(max(value, 0.0), 1.0)


def tagged_score(text: str, tag: str) -> float | None:
    """A score in [0, 1] from the last ``<tag>`` that holds a usable number, else from a
    ``tag: 0.7`` line (``inconsistency score = 0.7`` too); None when absent."""
    text = html.unescape(text or "").translate(_MINUSES)
    for raw in reversed(_tags(text, tag)):
        score = to_score(raw)
        if score is not None:
            return score
    spaced = re.escape(tag).replace("_", "[_ ]")
    lines = re.findall(rf"{spaced}\W{{0,5}}?([-+]?\.?\d[^\n]{{0,20}})", text, re.IGNORECASE)
    return to_score(lines[-1]) if lines else None


def nli_label(text: str) -> str | None:
    """SUPPORTS / REFUTES / NOT ENOUGH INFO from a model answer, leniently; None if unreadable.

    The label as written (in its ``<label>`` tag, else the answer's first lines) wins; otherwise
    synonyms are read, a negated one ("does not contradict") counting as NOT ENOUGH INFO.
    """
    tags = _tags(text, "label")
    candidates = [tags[-1]] if tags else [line for line in (text or "").splitlines() if line.strip()][:2]
    for candidate in candidates:
        exact = set(_EXACT.findall(candidate.upper() if tags else candidate))
        if len(exact) == 1 and not _NEGATED_LABEL.search(candidate.upper().split(next(iter(exact)))[0]):
            return exact.pop()
        for label, pattern in _SYNONYMS:
            match = pattern.search(candidate)
            if match:
                return "NOT ENOUGH INFO" if _NEGATED.search(candidate[: match.start()]) else label
    return None


def cited_elements(text: str, known: list[str]) -> list[str]:
    """The known element ids written in the answer's last ``<evidence>`` tag (the whole answer when
    it has no such tag), in the order written; ids the model made up (not among the documents
    shown) are dropped."""
    cited = tag_text(text, "evidence")
    if cited is None:
        cited = html.unescape(text or "")
    if not cited or not known:
        return []
    found: list[tuple[int, int, str]] = []
    for element in known:
        for match in re.finditer(rf"(?<![\w]){re.escape(element)}(?![\w])", cited):
            found.append((match.start(), match.end(), element))
    found.sort(key=lambda hit: (hit[0], -(hit[1] - hit[0])))
    ordered, end = [], -1
    for start, stop, element in found:  # a longer id wins over an id it contains
        if start >= end:
            ordered.append(element)
            end = stop
    return list(dict.fromkeys(ordered))
