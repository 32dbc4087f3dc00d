"""The language editions of Wikipedia as CLAIRE names them: a language code (``en``, ``fr``,
``de``…), its name for people, and which edition a passage belongs to. A shared leaf: the
settings, the search engine, the resolver and the cards read it.

A passage without a language is of the index's own edition (``retrieval.language``): an index
built from one edition before blocks carried a language reads as that edition.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache
from typing import Any

NAMES = {
    "en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "pl": "Polish", "ru": "Russian", "uk": "Ukrainian", "sv": "Swedish", "ja": "Japanese",
    "zh": "Chinese", "ar": "Arabic", "fa": "Persian", "ko": "Korean", "tr": "Turkish", "cs": "Czech",
    "fi": "Finnish", "no": "Norwegian", "da": "Danish", "he": "Hebrew", "hu": "Hungarian", "ca": "Catalan",
    "vi": "Vietnamese", "id": "Indonesian", "ro": "Romanian", "el": "Greek", "hi": "Hindi", "bn": "Bengali",
}
"""Names of the editions a user is most likely to name (any other well-formed code is accepted)."""

_CODE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$")


def checked_code(code: str) -> str:
    """A language code as an edition's subdomain spells it (``fr``, ``zh-yue``), lower-cased; a
    ValueError for anything else."""
    code = code.strip().lower()
    if not _CODE.match(code):
        raise ValueError(f"{code!r} is not a language code (an edition's subdomain, e.g. en, fr, de)")
    return code


def language_list(value: Any) -> Any:
    """``"fr,de"`` (a flag, an environment variable) or a list, as a list of checked codes in order,
    each once."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return list(dict.fromkeys(checked_code(str(part)) for part in value))
    return value


def name_of(code: str | None) -> str:
    """An edition's language for people: ``French`` for ``fr`` (the code itself when unknown)."""
    if not code:
        return "the index's language"
    return NAMES.get(code, code)


def edition_of(passage: Any, default: str) -> str:
    """The edition a passage (anything with ``language``) belongs to: its own language, else ``default``."""
    return getattr(passage, "language", None) or default


_QUALIFIED = re.compile(r"^([a-z]{2,3}(?:-[a-z0-9]{2,8})*):(.+)$")


def edition_title(entry: str, default: str) -> tuple[str, str]:
    """(edition, title) of an article as a list names it: ``de:Saturn V`` is the German edition's,
    ``Saturn V`` the ``default`` edition's (a prefix that is no known language code, as in
    ``Star Wars: Episode IV``, is part of the title)."""
    found = _QUALIFIED.match(entry.strip())
    if found and (found.group(1) in NAMES or found.group(1) == default):
        return found.group(1), found.group(2).strip()
    return default, entry.strip()


def qualified(language: str, title: str, default: str) -> str:
    """How a list names an article of edition ``language``: its title alone in the ``default`` edition,
    else ``language:title``."""
    return title if language == default else f"{language}:{title}"


def sentence_spans(text: str, language: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` as a segmenter that knows ``language``'s rules
    splits them (pySBD: ``31. März`` or ``z. B.`` in German, ``M. Dupont`` in French end nothing);
    surrounding blanks trimmed. For a language pySBD does not know, its English rules."""
    import pysbd

    try:
        segmenter = pysbd.Segmenter(language=language, clean=False, char_span=True)
    except ValueError:
        segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return [span for piece in segmenter.segment(text) if (span := trimmed(text, piece.start, piece.end))]


def trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span ``start:end`` of ``text`` without its surrounding blanks (None when nothing is left)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


@lru_cache(maxsize=64)
def month_names(language: str) -> tuple[str, dict[str, int]]:
    """(a regular expression alternation of the language's month names, each name's month number):
    wide and abbreviated, from Babel's CLDR data; English's are always included."""
    from babel import Locale, UnknownLocaleError
    from babel.dates import get_month_names

    names: dict[str, int] = {}
    for code in dict.fromkeys([language.replace("-", "_"), "en"]):
        try:
            locale = Locale.parse(code)
        except (UnknownLocaleError, ValueError):
            continue
        for width in ("wide", "abbreviated"):
            for context in ("format", "stand-alone"):
                for number, name in get_month_names(width, context, locale).items():
                    names.setdefault(name.casefold().rstrip("."), number)
    return "(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")", names


def dates_in(text: str, language: str) -> list[tuple[int, int, tuple[int, int, int], str]]:
    """The dates written in ``text`` in the language's way: ``(start, end, (year, month, day), as
    written)`` each, with day 0 for a month and year alone. Reads ``31. März 1890``, ``1er janvier
    1887``, ``9 de noviembre de 1967``, ``March 31, 1889``, ``1889-03-31`` and ``1889-03``."""
    month, numbers = month_names(language)
    patterns = [
        (rf"(?<!\d)(\d{{1,2}})(?:er|\.|º)?\s+(?:de\s+)?{month}\.?\s+(?:de\s+)?(\d{{3,4}})(?!\d)", "dmy"),
        (rf"(?<!\w){month}\.?\s+(\d{{1,2}}),?\s+(\d{{3,4}})(?!\d)", "mdy"),
        (r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)", "iso"),
        (r"(?<![\d-])(\d{4})-(\d{2})(?![\d-])", "iso month"),
        (rf"(?<![\w.]){month}\.?\s+(?:de\s+)?(\d{{4}})(?!\d)", "my"),
    ]
    found: list[tuple[int, int, tuple[int, int, int], str]] = []
    for pattern, order in patterns:
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if any(start < match.end() and match.start() < end for start, end, _, _ in found):
                continue
            groups = match.groups()
            if order == "dmy":
                day, month_no, year = int(groups[0]), numbers.get(groups[1].casefold().rstrip(".")), int(groups[2])
            elif order == "mdy":
                month_no, day, year = numbers.get(groups[0].casefold().rstrip(".")), int(groups[1]), int(groups[2])
            elif order == "iso":
                year, month_no, day = int(groups[0]), int(groups[1]), int(groups[2])
            elif order == "iso month":
                year, month_no, day = int(groups[0]), int(groups[1]), 0
            else:
                month_no, day, year = numbers.get(groups[0].casefold().rstrip(".")), 0, int(groups[1])
            if not month_no or not 1 <= month_no <= 12:
                continue
            if day:
                try:
                    date(year, month_no, day)
                except ValueError:
                    continue
            found.append((match.start(), match.end(), (year, month_no, day), match.group(0).strip()))
    return sorted(found)
