"""Interlanguage links from a Wikipedia's ``langlinks`` table dump
(``{wiki}-latest-langlinks.sql.gz``): which title each page has in the other editions.

The table dump is a MySQL script of ``INSERT INTO `langlinks` VALUES (ll_from,'ll_lang','ll_title'),…``
statements; ``ll_from`` is the page id in the dump's own edition. It is read as a stream, row by
row, keeping only the languages asked for, so an edition's whole table costs memory only for those.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Iterator

from claire.errors import DatasetError

_ROW = re.compile(rb"\((\d+),'((?:[^'\\]|\\.)*)','((?:[^'\\]|\\.)*)'\)")
_ESCAPE = re.compile(rb"\\(.)")


def _unescaped(raw: bytes) -> str:
    return _ESCAPE.sub(lambda m: {b"n": b"\n", b"t": b"\t", b"0": b"\0"}.get(m.group(1), m.group(1)), raw).decode(
        "utf-8", errors="replace")


def langlink_rows(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """(page id, language, title) for each row of the table dump at ``path`` (``.sql`` or ``.sql.gz``)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such langlinks table dump (a {'{wiki}'}-latest-langlinks.sql.gz file)")
    opener = gzip.open if path.name.endswith(".gz") else open
    seen_insert = False
    try:
        with opener(path, "rb") as stream:
            for line in stream:
                if not line.startswith(b"INSERT INTO"):
                    continue
                if b"`langlinks`" not in line[:40]:
                    raise DatasetError(f"{path}: this is not the langlinks table (it inserts into another table)")
                seen_insert = True
                for match in _ROW.finditer(line):
                    title = _unescaped(match.group(3)).replace("_", " ").strip()
                    if title:
                        yield int(match.group(1)), _unescaped(match.group(2)), title
    except (OSError, EOFError) as error:
        raise DatasetError(f"{path}: the table dump cannot be read ({error})") from None
    if not seen_insert:
        raise DatasetError(f"{path}: no INSERT INTO `langlinks` statement found; is it the langlinks table dump?")


def read_langlinks(path: str | Path, languages: list[str] | None = None) -> dict[int, dict[str, str]]:
    """Each page id's counterparts, ``{page_id: {language: title}}``, for ``languages`` (all when None)."""
    wanted = set(languages) if languages else None
    links: dict[int, dict[str, str]] = {}
    for page_id, language, title in langlink_rows(path):
        if wanted is None or language in wanted:
            links.setdefault(page_id, {})[language] = title
    return links
