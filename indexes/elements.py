"""The citable elements of a block and their FEVEROUS-style ids (``Page_sentence_3``,
``Page_cell_0_1_2``, ``Page_header_cell_0_0_1``, ``Page_table_caption_0``, ``Page_item_1_4``):
what kind of element an id names, and a block's elements laid out in lines for a prompt, the
cells of one table row sharing a line."""

from __future__ import annotations

import re
from typing import Any, Iterable, Protocol

ELEMENT_ID = re.compile(
    r"^(?P<page>.+?)_(?P<kind>header_cell|cell|table_caption|sentence|item|section|title)(?:_(?P<pos>\d+(?:_\d+)*))?$"
)


class Element(Protocol):
    """Anything with an element ``id`` and its ``text``."""

    id: str
    text: str


def element_kind(element_id: str) -> str | None:
    """``sentence``, ``cell``, ``header_cell``, ``table_caption``, ``item`` ... of an element id."""
    match = ELEMENT_ID.match(element_id)
    return match.group("kind") if match else None


def element_rows(elements: Iterable[Element] | None) -> list[list[Element]]:
    """Elements grouped into display lines: consecutive cells of one table row share a line,
    every other element has a line of its own."""
    rows: list[list[Element]] = []
    last_row: tuple[str, str] | None = None
    for element in elements or []:
        match = ELEMENT_ID.match(element.id)
        row = None
        if match and match.group("kind") in ("cell", "header_cell") and match.group("pos"):
            table, number, *_ = match.group("pos").split("_") + [""]
            row = (f"{match.group('page')}/{table}", number)
        if row is not None and row == last_row:
            rows[-1].append(element)
        else:
            rows.append([element])
        last_row = row
    return rows


def known_elements(documents: Iterable[Any]) -> list[str]:
    """Every element id of the passages (anything with ``elements``), in order, once."""
    return list(dict.fromkeys(element.id for document in documents for element in (document.elements or [])))
