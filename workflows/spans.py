"""Where an extracted fact sits in the submitted text: the sentence that states it.

Extraction rewrites facts (pronouns resolved, subject named), so a fact is rarely a substring
of the text. Each fact is matched to the sentence sharing most of its words (numbers count
double, since they are what contradictions are usually about); a fact with too little in
common with every sentence gets no span.
"""

from __future__ import annotations

import re

# A sentence runs to a stop that is followed by a blank, a line end or the end of the text (so
# "1.5 km" and "example.org" do not end one), closing quotes and brackets included.
_SENTENCE = re.compile(r"""(?:[^.!?\n]|[.!?]+(?=[^\s.!?"'”’)\]]))+(?:[.!?]+["'”’)\]]*)?""")
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the of in on at to for by with from and or is was were are be been it its this that as which who".split()
)


def sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (surrounding blanks trimmed)."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def _weights(text: str) -> dict[str, float]:
    words = {}
    for word in _WORD.findall(text.casefold()):
        if word not in _STOP:
            words[word] = 2.0 if word.isdigit() else 1.0
    return words


def locate(fact: str, text: str, *, minimum: float = 0.35) -> tuple[int, int] | None:
    """The span of the sentence of ``text`` that best matches ``fact``, or None."""
    wanted = _weights(fact)
    total = sum(wanted.values())
    if not total:
        return None
    best, best_score = None, minimum
    for start, end in sentences(text):
        have = _weights(text[start:end])
        score = sum(weight for word, weight in wanted.items() if word in have) / total
        if score > best_score:
            best, best_score = (start, end), score
    return best
