"""The language editions of Wikipedia as CLAIRE names them: a language code (``en``, ``fr``,
``de``…), its name for people, and which edition a passage belongs to. A shared leaf: the
settings, the search engine, the resolver and the cards read it.

A passage without a language is of the index's own edition (``retrieval.language``): an index
built from one edition before blocks carried a language reads as that edition.
"""

from __future__ import annotations

import re
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
