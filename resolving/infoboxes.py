"""The infobox pass: an article's infobox set against its counterparts' in other language editions,
with no LLM call.

- :func:`infobox_fields` reads an infobox block (``Field: value`` lines, as every ingester writes
  them; French ``Field : value`` too);
- :func:`value_parts` normalises a value by its edition's conventions: dates written with the
  language's month names or in ISO form (:func:`claire.languages.dates_in`), numbers with the locale's decimal and
  group marks, and quantities with a unit converted to SI;
- :func:`align_fields` pairs the fields of two infoboxes: the similarity of their names under a
  multilingual embedder, raised where the values agree, one to one (the Hungarian assignment);
- :func:`compare_infoboxes` gives each aligned row a verdict: ``same`` (the values normalise
  alike), ``differs`` (a confident alignment whose dates, counts or quantities disagree: a clear
  mismatch, listed as it is) or ``to the model`` (text, a loose alignment, or values only partly
  compared), which the research and the verifier judge like any other statement.

:func:`dispute_numbers` says which numbers two statements dispute (those one gives and the other
does not), so that an infobox row and a sentence disputing the same figures count as one
contradiction (:func:`claire.resolving.flags.same_contradictions`).

Field names are short and an embedder tells them apart poorly on their own ("Stages" and "Starts"),
so a pair of fields is scored by the mean of two similarities: of the names alone and of the whole
rows (``name: value``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from claire.languages import dates_in
from pydantic import BaseModel, Field

Encode = Callable[[list[str]], np.ndarray]
"""Texts to unit-length vectors (a multilingual embedder's ``encode_queries``)."""

CONFIDENT = 0.86
"""The score (see :func:`align_fields`) from which an alignment is confident enough to list a
mismatch without a model. Below it and down to :data:`LOOSE` the row goes to the model; below
:data:`LOOSE` the fields are left unaligned. Set on the shipped demo's infoboxes: its 31 aligned
pairs, all right, score 0.861 to 1.041 (*Number of tracks* and *Pistes* lowest), so 0.86 sits just
under them. Pairs the assignment passed over score up to 0.909: the one-to-one assignment, not the
score alone, decides which fields pair."""
LOOSE = 0.80
VALUE_BONUS = 0.06
"""Added to two fields' name similarity when their values normalise alike (a shared date,
quantity or number): the value says the fields are the same even where the names are terse."""
RELATIVE_TOLERANCE = 0.005
"""Two quantities agree within half a percent, or within the rounding of the less precise."""
APPROXIMATE_TOLERANCE = 0.05
"""... or within five percent when either is marked as approximate (about, environ, etwa, ca.)."""

Verdict = Literal["same", "differs", "to the model"]


# -- reading a block --------------------------------------------------------------------------------
def infobox_fields(content: str) -> list[tuple[str, str]]:
    """The (name, value) rows of an infobox block; lines without a ``:`` are left out."""
    rows = []
    for line in content.splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip() and value.strip() and len(name) <= 80:
            rows.append((name.strip(), value.strip()))
    return rows


# -- normalising a value ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """One normalised component of a value: a date (``(year, month, day)`` with zeros where the
    value does not say), a quantity in SI units with its dimension, or a plain number."""

    kind: Literal["date", "quantity", "number"]
    amount: float | tuple[int, int, int]
    written: str
    dimension: str = ""
    step: float = 1.0  # the rounding the value was written with, in SI units


_SPACES = "\u00a0\u202f\u2009 "
_NUMBER = re.compile(rf"(?<![\w.,])\d{{1,3}}(?:[{_SPACES}.,']\d{{3}})+(?:[.,]\d+)?(?!\d)|(?<![\w.,])\d+(?:[.,]\d+)?(?!\d)")
_APPROXIMATE = re.compile(r"\b(about|around|approx\w*|circa|ca\.|c\.|environ|etwa|rund|unge?fähr|aproximadamente|"
                          r"alrededor|cerca|約)", re.IGNORECASE)
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1.0), "km": ("length", 1000.0),
    "ft": ("length", 0.3048), "feet": ("length", 0.3048), "foot": ("length", 0.3048), "mi": ("length", 1609.344),
    "miles": ("length", 1609.344), "mile": ("length", 1609.344), "metre": ("length", 1.0), "metres": ("length", 1.0),
    "meter": ("length", 1.0), "meters": ("length", 1.0), "mètre": ("length", 1.0), "mètres": ("length", 1.0),
    "metros": ("length", 1.0), "metro": ("length", 1.0), "kilometres": ("length", 1000.0),
    "kilometers": ("length", 1000.0), "kilomètres": ("length", 1000.0), "kilometer": ("length", 1000.0),
    "m²": ("area", 1.0), "km²": ("area", 1e6), "ha": ("area", 1e4), "sq ft": ("area", 0.09290304),
    "sq mi": ("area", 2589988.11), "m³": ("volume", 1.0), "m³/s": ("flow", 1.0),
    "kg": ("mass", 1.0), "t": ("mass", 1000.0), "tonnes": ("mass", 1000.0), "tons": ("mass", 907.18474),
    "lb": ("mass", 0.45359237), "g": ("mass", 0.001),
    "km/h": ("speed", 1 / 3.6), "mph": ("speed", 0.44704), "m/s": ("speed", 1.0),
}
_UNIT = re.compile(r"\s?(" + "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)) + r")(?![\w²³])")


@lru_cache(maxsize=64)
def _decimal_mark(language: str) -> str:
    """The locale's decimal mark, from Babel's CLDR data (English's when unknown)."""
    from babel import Locale, UnknownLocaleError
    from babel.numbers import get_decimal_symbol

    try:
        locale = Locale.parse(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        locale = Locale.parse("en")
    return get_decimal_symbol(locale)


def parse_number(text: str, language: str) -> tuple[float, float] | None:
    """(value, the step of its last written digit) of a number as the language writes it: German
    ``10,1`` and ``530.000``, French ``18 000`` and ``2,5``, English ``1,083`` and ``110.6``: the
    locale's decimal mark splits off the fraction, and every other mark or space groups digits."""
    decimal = _decimal_mark(language)
    text = text.strip()
    for space in _SPACES:
        text = text.replace(space, "")
    marks = [c for c in text if c in ".,'"]
    if len(marks) == 1 and marks[0] != decimal and re.fullmatch(r"\d{1,3}[.,']\d{1,2}", text) and marks[0] in ".,":
        decimal = marks[0]  # "110.6" in a German infobox: one mark followed by fewer than three digits
    whole, _, fraction = text.rpartition(decimal) if decimal in text else (text, "", "")
    whole = re.sub(r"[.,']", "", whole)
    if not whole.isdigit() or (fraction and not fraction.isdigit()):
        return None
    value = float(f"{whole}.{fraction}" if fraction else whole)
    step = 10.0 ** -len(fraction) if fraction else 1.0
    if not fraction and whole.endswith("000") and value >= 1000:
        step = 10.0 ** (len(whole) - len(whole.rstrip("0")))  # "1,000" is known to the thousand, "1,083" to the unit
    return value, step


_DURATION = re.compile(r"(?<![\d:])(\d{1,3}):([0-5]\d)(?::([0-5]\d))?(?![\d:])")
_FEET_INCHES = re.compile(r"(?<![\d.,])(\d{1,2})\s?(?:ft|feet|foot|['′])\s?(\d{1,2}(?:\.\d+)?)\s?(?:in|inches|[\"″])(?!\w)")
"""A height in feet and inches (``6 ft 10 in``, ``6′10″``, ``5'7"``), read as one length."""


def value_parts(value: str, language: str) -> tuple[list[Part], str]:
    """The normalised parts of a value, in order (dates first found, then heights in feet and
    inches, running times (``47:03``), quantities and numbers outside them), and the text left once
    they are taken out."""
    taken = [(start, end, Part("date", ymd, written)) for start, end, ymd, written in dates_in(value, language)]
    for match in _FEET_INCHES.finditer(value):
        if not any(start < match.end() and match.start() < end for start, end, _ in taken):
            metres = int(match.group(1)) * 0.3048 + float(match.group(2)) * 0.0254
            taken.append((match.start(), match.end(), Part("quantity", metres, match.group(0), "length", 0.0254)))
    for match in _DURATION.finditer(value):
        if not any(start < match.end() and match.start() < end for start, end, _ in taken):
            a, b, c = (int(g) if g else None for g in match.groups())
            seconds = (a * 3600 + b * 60 + c) if c is not None else (a * 60 + b)  # type: ignore[operator]
            taken.append((match.start(), match.end(), Part("quantity", float(seconds), match.group(0), "time")))
    for match in _NUMBER.finditer(value):
        if any(start < match.end() and match.start() < end for start, end, _ in taken):
            continue
        parsed = parse_number(match.group(0), language)
        if parsed is None:
            continue
        amount, step = parsed
        unit = _UNIT.match(value, match.end())
        if unit:
            dimension, factor = UNITS[unit.group(1)]
            part = Part("quantity", amount * factor, value[match.start():unit.end()].strip(), dimension, step * factor)
            taken.append((match.start(), unit.end(), part))
        elif re.fullmatch(r"\d{4}", match.group(0)) and 1000 <= amount <= 2100:
            taken.append((match.start(), match.end(), Part("date", (int(amount), 0, 0), match.group(0))))
        else:
            taken.append((match.start(), match.end(), Part("number", amount, match.group(0), step=step)))
    taken.sort(key=lambda item: item[0])
    rest = value
    for start, end, _ in sorted(taken, key=lambda item: -item[0]):
        rest = rest[:start] + " " + rest[end:]
    return [part for _, _, part in taken], rest


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.casefold()) if not w.isdigit() and len(w) > 1}


# -- comparing two values ---------------------------------------------------------------------------
def _same_date(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Two dates agree at the precision both give (a year alone agrees with any day of it)."""
    return all(x == y for x, y in zip(a, b) if x and y)


def _same_amount(a: Part, b: Part, approximate: bool) -> bool:
    x, y = float(a.amount), float(b.amount)  # type: ignore[arg-type]
    tolerance = max(RELATIVE_TOLERANCE * max(abs(x), abs(y)), max(a.step, b.step) / 2)
    if approximate:
        tolerance = max(tolerance, APPROXIMATE_TOLERANCE * max(abs(x), abs(y)))
    return math.isclose(x, y, abs_tol=tolerance + 1e-9)


def _matching(a: Part, b: Part) -> bool:
    """Whether two parts say the same thing in the same terms (a date and a date, a length and a
    length, a number and a number)."""
    return a.kind == b.kind and a.dimension == b.dimension


def compare_values(value: str, language: str, other: str, other_language: str) -> tuple[Verdict, str, tuple[str, str] | None]:
    """(the verdict, why, the two values in dispute as written) for two values of aligned fields.
    The first date, quantity or number each value gives is compared with the other's of the same
    kind; text the values hold besides is for the model unless both hold the same words."""
    parts, rest = value_parts(value, language)
    other_parts, other_rest = value_parts(other, other_language)
    approximate = bool(_APPROXIMATE.search(value) or _APPROXIMATE.search(other))
    compared = 0
    for part in parts:
        match = next((o for o in other_parts if _matching(part, o)), None)
        if match is None:
            continue
        compared += 1
        if part.kind == "date":
            if not _same_date(part.amount, match.amount):  # type: ignore[arg-type]
                return "differs", f"the dates differ: {part.written} against {match.written}", (part.written, match.written)
        elif not _same_amount(part, match, approximate):
            what = "quantities" if part.kind == "quantity" else "numbers"
            return "differs", f"the {what} differ: {part.written} against {match.written}", (part.written, match.written)
        break  # the leading figure of a kind is the field's value; what follows is detail
    words, other_words = _words(rest), _words(other_rest)
    if compared and (not words or not other_words or words == other_words):
        return "same", "the values agree", None
    if not compared and words and words == other_words:
        return "same", "the same words", None
    if not compared and not parts and not other_parts and " ".join(value.casefold().split()) == " ".join(other.casefold().split()):
        return "same", "the same text", None
    return "to the model", ("the figures agree; the rest is text" if compared else "text (no date, number or quantity to compare)"), None


def dispute_numbers(value: str, language: str | None, other: str, other_language: str | None) -> frozenset[tuple[float, ...]] | None:
    """The figures two statements dispute: the numbers each gives that the other does not (dates'
    years and days and quantities' figures as written, read by each language's conventions), as an
    unordered pair; None when neither gives a number the other lacks."""
    def numbers(text: str, code: str | None) -> set[float]:
        found = set()
        for match in _NUMBER.finditer(text):
            parsed = parse_number(match.group(0), code or "en")
            if parsed is not None:
                found.add(parsed[0])
        return found

    mine, theirs = numbers(value, language), numbers(other, other_language)
    a, b = tuple(sorted(mine - theirs)), tuple(sorted(theirs - mine))
    if not a and not b:
        return None
    return frozenset({a, b})


# -- aligning two infoboxes -------------------------------------------------------------------------
class InfoboxRow(BaseModel):
    """Two aligned fields and what their values say."""

    field: str
    value: str
    other_field: str
    other_value: str
    similarity: float
    verdict: Verdict
    why: str
    disputed: tuple[str, str] | None = None  # the two values in dispute as written (a mismatch)


class InfoboxComparison(BaseModel):
    """An article's infobox against a counterpart's: the aligned rows and the fields left alone."""

    article: str
    language: str
    block_id: str
    other_article: str
    other_language: str
    other_block_id: str
    rows: list[InfoboxRow] = Field(default_factory=list)
    unaligned: list[str] = Field(default_factory=list)
    other_unaligned: list[str] = Field(default_factory=list)



def _values_agree(parts: list[Part], other_parts: list[Part]) -> bool | None:
    """True when two values' parts share a date or a figure, None when both hold figures of no
    common kind (a running time against a count: not the same field), else False."""
    if parts and other_parts and not any(_matching(p, o) for p in parts for o in other_parts):
        return None
    for part in parts:
        match = next((o for o in other_parts if _matching(part, o)), None)
        if match is not None:
            if part.kind == "date":
                return _same_date(part.amount, match.amount) and bool(part.amount[1])  # type: ignore[index,arg-type]
            return _same_amount(part, match, False)
    return False


def align_fields(fields: Sequence[tuple[str, str]], language: str, other_fields: Sequence[tuple[str, str]],
                 other_language: str, encode: Encode) -> list[tuple[int, int, float]]:
    """(row, other row, similarity) of the fields aligned one to one, best assignment first, at
    :data:`LOOSE` or above."""
    from scipy.optimize import linear_sum_assignment

    if not fields or not other_fields:
        return []
    count = len(fields)
    names = encode([name for name, _ in fields] + [name for name, _ in other_fields])
    whole = encode([f"{name}: {value}" for name, value in fields] + [f"{name}: {value}" for name, value in other_fields])
    scores = (names[:count] @ names[count:].T + whole[:count] @ whole[count:].T) / 2
    parts = [value_parts(value, language)[0] for _, value in fields]
    other_parts = [value_parts(value, other_language)[0] for _, value in other_fields]
    for i, mine in enumerate(parts):
        for j, theirs in enumerate(other_parts):
            agreement = _values_agree(mine, theirs)
            if agreement is True:
                scores[i, j] += VALUE_BONUS
            elif agreement is None:
                scores[i, j] -= VALUE_BONUS
    chosen, columns = linear_sum_assignment(-scores)
    pairs = [(int(i), int(j), float(scores[i, j])) for i, j in zip(chosen, columns) if scores[i, j] >= LOOSE]
    return sorted(pairs, key=lambda pair: -pair[2])


def compare_infoboxes(block: Any, other: Any, *, language: str, other_language: str,
                      encode: Encode) -> InfoboxComparison:
    """Two infobox blocks (anything with ``document_title``, ``id`` and ``content``) compared row by
    row (see the module docstring)."""
    fields = infobox_fields(block.content)
    other_fields = infobox_fields(other.content)
    aligned = align_fields(fields, language, other_fields, other_language, encode)
    rows = []
    for i, j, similarity in aligned:
        (name, value), (other_name, other_value) = fields[i], other_fields[j]
        verdict, why, disputed = compare_values(value, language, other_value, other_language)
        if verdict == "differs" and similarity < CONFIDENT:
            verdict, why, disputed = "to the model", f"a loose alignment ({similarity:.2f}); {why}", None
        rows.append(InfoboxRow(field=name, value=value, other_field=other_name, other_value=other_value,
                               similarity=round(similarity, 3), verdict=verdict, why=why, disputed=disputed))
    used, other_used = {i for i, _, _ in aligned}, {j for _, j, _ in aligned}
    return InfoboxComparison(
        article=block.document_title, language=language, block_id=block.id,
        other_article=other.document_title, other_language=other_language, other_block_id=other.id,
        rows=rows, unaligned=[name for k, (name, _) in enumerate(fields) if k not in used],
        other_unaligned=[name for k, (name, _) in enumerate(other_fields) if k not in other_used])
