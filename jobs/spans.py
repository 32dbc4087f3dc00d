"""Where an extracted fact sits in the submitted text: the sentence that states it.

The text is read as a reader sees it: heading lines (``## Landmarks``, ``== Overview ==``) are
section titles, not sentences; a blank line ends a paragraph, while a single line break inside a
paragraph (hard-wrapped text) is only a space; a list item or table row starts anew.

A fact is placed by the best match, in this order: the source sentence extraction reports it
came from (when it is found in the text); a sentence that says exactly the fact; the shortest
sentence holding every word of the fact (the most specific, so an added "Compaq released the
Compaq Portable in 1982." is not lost to a longer sentence saying more); and last the sentence
sharing most of its words (numbers count double, since they are what contradictions are usually
about). A fact with too little in common with every sentence gets no span. Among equals the first
sentence wins, within the fact's own block when it is known.

Spans are found in code points (Python's string index); what clients are told counts UTF-16 code
units, as JavaScript indexes a string (:func:`utf16_index`): the two differ after any character
outside the Basic Multilingual Plane (emoji, mathematical letters, CJK Extension B), all of which
occur in Wikipedia.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from claire.indexes.corpus import heading
from claire.languages import sentence_spans, trimmed

# A sentence runs to a stop that is followed by a blank or the end of its paragraph (so "1.5 km"
# and "example.org" do not end one), closing quotes and brackets included.
_SENTENCE = re.compile(r"""(?:[^.!?]|[.!?]+(?=[^\s.!?"'”’)\]]))+(?:[.!?]+["'”’)\]]*)?""")
_LINE = re.compile(r"[^\n]*\n?")
_ITEM = re.compile(r"\s*(?:[-*•|]|\d+[.)])\s")  # a list item or table row: a paragraph of its own
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the of in on at to for by with from and or is was were are be been it its this that as which who".split()
)

Span = tuple[int, int]


def paragraphs(text: str) -> list[Span]:
    """Character spans of the paragraphs of ``text``: runs of lines up to a blank line, a heading,
    a list item or a table row (headings belong to none)."""
    found: list[Span] = []
    start = end = None
    position = 0
    for match in _LINE.finditer(text):
        line = match.group()
        if not line:
            break
        begins, position = position, position + len(line)
        if not line.strip() or heading(line) is not None:
            if start is not None:
                found.append((start, end))
            start = None
            continue
        if start is not None and _ITEM.match(line):
            found.append((start, end))
            start = None
        if start is None:
            start = begins
        end = begins + len(line.rstrip("\n"))
    if start is not None:
        found.append((start, end))
    return found


def sentences(text: str, language: str | None = None) -> list[Span]:
    """Character spans of the sentences of ``text`` (surrounding blanks trimmed); for a ``language``
    other than English, by that language's rules (:func:`claire.languages.sentence_spans`)."""
    if language and language != "en":
        return [(first + start, first + end) for first, last in paragraphs(text)
                for start, end in sentence_spans(text[first:last], language)]
    return [span for first, last in paragraphs(text) for match in _SENTENCE.finditer(text, first, last)
            if (span := trimmed(text, *match.span()))]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _weights(words: list[str]) -> dict[str, float]:
    return {word: 2.0 if word.isdigit() else 1.0 for word in words if word not in _STOP}


@dataclass(frozen=True)
class _Reading:
    """A text read once for locating many facts in it: its sentences, their words, every word's place."""

    units: list[Span]
    unit_words: list[list[str]]
    tokens: list[tuple[str, int, int]]


@lru_cache(maxsize=8)
def _read(text: str, language: str | None = None) -> _Reading:
    units = sentences(text, language)
    return _Reading(units, [_words(text[s:e]) for s, e in units],
                    [(m.group().casefold(), m.start(), m.end()) for m in _WORD.finditer(text)])


def _words_at(reading: _Reading, words: list[str], region: Span | None = None) -> Span | None:
    """Where the word sequence ``words`` stands in the text (within ``region``), case and punctuation aside."""
    tokens = reading.tokens if region is None else [t for t in reading.tokens if region[0] <= t[1] and t[2] <= region[1]]
    size = len(words)
    for i in range(len(tokens) - size + 1) if size else ():
        if all(tokens[i + k][0] == words[k] for k in range(size)):
            return tokens[i][1], tokens[i + size - 1][2]
    return None


def _covering(units: list[Span], where: Span) -> Span:
    """The sentences overlapping ``where``, as one span (``where`` itself when none does)."""
    hit = [(s, e) for s, e in units if s < where[1] and e > where[0]]
    return (min(s for s, _ in hit), max(e for _, e in hit)) if hit else where


def _best(fact: str, reading: _Reading, region: Span | None, minimum: float) -> Span | None:
    wanted = _weights(_words(fact))
    total = sum(wanted.values())
    candidates = [(span, words) for span, words in zip(reading.units, reading.unit_words)
                  if region is None or (region[0] <= span[0] and span[1] <= region[1])]
    if not total or not candidates:
        return None
    exact = _words(fact)
    for span, words in candidates:  # the sentence that says exactly the fact
        if words == exact:
            return span
    covering = [(len(words), span) for span, words in candidates if set(wanted) <= set(words)]
    if covering:  # the most specific sentence holding every word of the fact
        return min(covering, key=lambda item: item[0])[1]
    best, best_score = None, minimum
    for span, words in candidates:  # the sentence sharing most of the fact's words
        have = set(words)
        score = sum(weight for word, weight in wanted.items() if word in have) / total
        if score > best_score:
            best, best_score = span, score
    return best


def locate(fact: str, text: str, *, source: str | None = None, block: str | None = None,
           minimum: float = 0.35, language: str | None = None) -> Span | None:
    """The span of the sentence of ``text`` (written in ``language``) that states ``fact``, or None.

    ``source`` is the sentence extraction says the fact restates: where it is found in the text,
    that is the answer. ``block`` is the passage the fact was extracted from: the fact is sought
    there first (a sentence repeated elsewhere in the text is then found where the fact came from).
    """
    reading = _read(text, language)
    region = _words_at(reading, _words(block)) if block else None
    if region is not None:
        region = _covering(reading.units, region)
    if source:
        for within in ([region] if region else []) + [None]:
            where = _words_at(reading, _words(source), within)
            if where is not None:
                return _covering(reading.units, where)
    if region is not None:
        found = _best(fact, reading, region, minimum)
        if found is not None:
            return found
    return _best(fact, reading, None, minimum)


def utf16_index(text: str, index: int | None) -> int | None:
    """The position ``index`` (in code points) of ``text`` counted in UTF-16 code units, as a
    JavaScript string indexes the same text (None stays None)."""
    if index is None:
        return None
    head = text[:index]
    return index + sum(1 for char in head if ord(char) > 0xFFFF) if not head.isascii() else index
