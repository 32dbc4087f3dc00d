"""FEVEROUS's Wikipedia pages (``feverous_wikiv1``, one page JSON a line) as corpus blocks whose
citable elements keep FEVEROUS's ids.

A page is ``{"title", "order": [...], "sentence_0": "...", "section_0": {"value", "level"},
"table_0": {"table": [[{"id", "value", "is_header"}, ...], ...], "caption"?, "type"?},
"list_0": {"list": [{"id", "value", "level"?}, ...]}, ...}``; ``order`` gives the reading order.
Consecutive sentences of a section are packed into text blocks of bounded length; each table
(split by rows when long) and each list becomes its own block. Every block lists its elements
with page-qualified ids: ``Page_sentence_N``, ``Page_cell_T_R_C``, ``Page_header_cell_T_R_C``,
``Page_table_caption_T`` and ``Page_item_L_N`` — the ids FEVEROUS's gold evidence uses.
Wiki link markup (``[[Target|text]]``) is reduced to the text a reader sees.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from claire.errors import ConfigError, DatasetError
from claire.indexes.corpus import block_id
from claire.domain import Block, BlockElement

_LINK = re.compile(r"\[\[([^\[\]|]*)\|?([^\[\]]*)\]\]")
_KEY = re.compile(r"^(sentence|section|table|list)_(\d+)$")


def plain_text(value: Any) -> str:
    """A FEVEROUS value as a reader sees it: ``[[A|b]]`` -> ``b``, ``[[A]]`` -> ``A``."""
    text = "" if value is None else str(value)
    return " ".join(_LINK.sub(lambda m: m.group(2) or m.group(1), text).split())


def _qualified(title: str, local: str) -> str:
    return local if local.startswith(f"{title}_") else f"{title}_{local}"


class _Page:
    """Turns one page dict into blocks; problems raise DatasetError naming ``where``."""

    def __init__(self, page: dict[str, Any], where: str, max_words: int):
        self.where = where
        self.max_words = max_words
        title = page.get("title")
        if not isinstance(title, str) or not title.strip():
            raise DatasetError(f"{where}: field 'title' is missing or empty")
        order = page.get("order")
        if not isinstance(order, list) or not all(isinstance(key, str) for key in order):
            raise DatasetError(f"{where}: field 'order' is missing or not a list of element keys")
        self.title = title
        self.page = page
        self.order = order
        self.sections: list[tuple[int, str]] = []
        self.blocks: list[Block] = []
        self.sentences: list[BlockElement] = []

    def section(self) -> str:
        return " > ".join(name for _, name in self.sections)

    def add(self, content: str, elements: list[BlockElement], kind: str) -> None:
        if not content.strip() or not elements:
            return
        section = self.section()
        key = "\n".join([e.id for e in elements] + [content])
        self.blocks.append(Block(id=block_id(self.title, section, key), document_title=self.title, section_title=section,
                                 content=content, block_type=kind, elements=elements))  # type: ignore[arg-type]

    def flush_sentences(self) -> None:
        chunk: list[BlockElement] = []
        words = 0
        for element in self.sentences:
            size = len(element.text.split())
            if chunk and words + size > self.max_words:
                self.add(" ".join(e.text for e in chunk), chunk, "text")
                chunk, words = [], 0
            chunk.append(element)
            words += size
        if chunk:
            self.add(" ".join(e.text for e in chunk), chunk, "text")
        self.sentences = []

    def blocks_of_page(self) -> list[Block]:
        for key in self.order:
            match = _KEY.match(key)
            if not match:
                raise DatasetError(f"{self.where}: field 'order' names '{key}', which is not sentence_N, section_N, table_N or list_N")
            if key not in self.page:
                raise DatasetError(f"{self.where}: field 'order' names '{key}' but the page has no such field")
            kind, number = match.group(1), match.group(2)
            value = self.page[key]
            if kind == "sentence":
                text = plain_text(value)
                if text:
                    self.sentences.append(BlockElement(id=_qualified(self.title, key), text=text))
                continue
            self.flush_sentences()
            if kind == "section":
                self._section(key, value)
            elif kind == "table":
                self._table(key, number, value)
            else:
                self._list(key, number, value)
        self.flush_sentences()
        return self.blocks

    def _section(self, key: str, value: Any) -> None:
        if not isinstance(value, dict) or not isinstance(value.get("level", 1), int):
            raise DatasetError(f"{self.where}: field '{key}' must be an object with 'value' and an integer 'level'")
        name, level = plain_text(value.get("value")), value.get("level", 1)
        while self.sections and self.sections[-1][0] >= level:
            self.sections.pop()
        if name:
            self.sections.append((level, name))

    def _table(self, key: str, number: str, value: Any) -> None:
        rows = value.get("table") if isinstance(value, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
            raise DatasetError(f"{self.where}: field '{key}.table' is missing or not a list of rows")
        caption_elements: list[BlockElement] = []
        caption = value.get("caption")
        if isinstance(caption, dict):
            caption = caption.get("value")
        if caption is not None and plain_text(caption):
            caption_elements.append(BlockElement(id=f"{self.title}_table_caption_{number}", text=plain_text(caption)))
        table_rows: list[list[BlockElement]] = []
        header_rows = 0
        for r, row in enumerate(rows):
            cells = []
            for c, cell in enumerate(row):
                if not isinstance(cell, dict) or "value" not in cell:
                    raise DatasetError(f"{self.where}: field '{key}.table[{r}][{c}]' must be an object with 'value'")
                local = cell.get("id") or f"{'header_cell' if cell.get('is_header') else 'cell'}_{number}_{r}_{c}"
                cells.append(BlockElement(id=_qualified(self.title, str(local)), text=plain_text(cell["value"])))
            if row and all(isinstance(cell, dict) and cell.get("is_header") for cell in row) and header_rows == r:
                header_rows += 1
            table_rows.append(cells)
        headers = table_rows[:header_rows]
        body = table_rows[header_rows:] or []
        kind = "infobox" if isinstance(value, dict) and value.get("type") == "infobox" else "table"
        # long tables are split by rows; each part repeats the header rows so it reads on its own
        parts: list[list[list[BlockElement]]] = []
        current: list[list[BlockElement]] = []
        words = 0
        for row in body:
            size = sum(len(cell.text.split()) for cell in row)
            if current and words + size > 2 * self.max_words:
                parts.append(current)
                current, words = [], 0
            current.append(row)
            words += size
        if current or not parts:
            parts.append(current)
        for index, part in enumerate(parts):
            shown = headers + part
            if not shown:
                continue
            lines = [f"Caption: {caption_elements[0].text}"] if caption_elements else []
            for r, row in enumerate(shown):
                lines.append("| " + " | ".join(cell.text.replace("|", "/") for cell in row) + " |")
                if r == 0:
                    lines.append("|" + "---|" * max(len(row), 1))
            elements = (caption_elements if index == 0 else []) + [cell for row in shown for cell in row]
            self.add("\n".join(lines), elements, kind)

    def _list(self, key: str, number: str, value: Any) -> None:
        items = value.get("list") if isinstance(value, dict) else None
        if not isinstance(items, list):
            raise DatasetError(f"{self.where}: field '{key}.list' is missing or not a list of items")
        elements, lines, words = [], [], 0
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "value" not in item:
                raise DatasetError(f"{self.where}: field '{key}.list[{i}]' must be an object with 'value'")
            text = plain_text(item["value"])
            if not text:
                continue
            level = item.get("level") if isinstance(item.get("level"), int) else 0
            size = len(text.split())
            if elements and words + size > self.max_words:
                self.add("\n".join(lines), elements, "text")
                elements, lines, words = [], [], 0
            elements.append(BlockElement(id=_qualified(self.title, str(item.get("id") or f"item_{number}_{i}")), text=text))
            lines.append("  " * level + f"- {text}")
            words += size
        self.add("\n".join(lines), elements, "text")


def _pages(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"FEVEROUS page file {path} not found") from None
    except OSError as error:
        raise DatasetError(f"cannot read FEVEROUS page file {path}: {error.strerror}") from None
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    page = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DatasetError(f"{where}: invalid JSON ({error.msg}); expected one page object a line") from None
                if not isinstance(page, dict):
                    raise DatasetError(f"{where}: expected a JSON object (one page a line)")
                yield where, page
        except UnicodeDecodeError as error:
            raise DatasetError(f"cannot read FEVEROUS page file {path}: {error}") from None


def blocks_from_feverous_pages(path: str | Path, *, max_words: int = 150) -> list[Block]:
    """Every block of a FEVEROUS page file, in file and reading order. A malformed page raises
    DatasetError naming FILE:LINE and the field."""
    if max_words < 1:
        raise ConfigError(f"max_words must be at least 1 (got {max_words})")
    blocks: dict[str, Block] = {}
    pages = 0
    for where, page in _pages(Path(path)):
        pages += 1
        for block in _Page(page, where, max_words).blocks_of_page():
            blocks.setdefault(block.id, block)
    if not pages:
        raise DatasetError(f"{path}: no pages (expected one FEVEROUS page JSON object a line)")
    return list(blocks.values())
