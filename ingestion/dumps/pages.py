"""The page a dump reader yields, and how a converted page becomes corpus blocks.

Converters (``wikitext``, ``html``) walk a page in reading order and hand each piece to a
:class:`BlockWriter`: prose paragraphs under the current section path, tables (already
linearised as markdown rows) and infoboxes (``Field: value`` lines). The writer packs prose the
way :func:`~claire.indexes.corpus.blocks_from_article` does, splits long tables into blocks that
repeat the header row, and numbers blocks in order so that a block's id — ``{page_id}-{n}`` —
is the same every time the same revision is converted. Re-storing a page therefore overwrites
its blocks instead of adding copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote

from claire.indexes.corpus import pack_paragraphs
from claire.domain import Block
from claire.ingestion.references import RefBook, split_marked

SkipReason = Literal["redirect", "disambiguation", "namespace", "empty"]
SKIP_REASONS: tuple[SkipReason, ...] = ("redirect", "disambiguation", "namespace", "empty")
APPARATUS_SECTIONS = frozenset(
    s.lower() for s in ("References", "External links", "Further reading", "Notes", "Sources", "Bibliography",
                        "Citations", "Footnotes", "See also", "Notes and references", "Works cited",
                        # German, French and Spanish editions
                        "Einzelnachweise", "Literatur", "Weblinks", "Anmerkungen", "Siehe auch", "Quellen",
                        "Notes et références", "Références", "Liens externes", "Voir aussi", "Bibliographie", "Notes",
                        "Referencias", "Enlaces externos", "Véase también", "Bibliografía", "Notas")
)
"""Sections of references and links, left out of the corpus (in the English, German, French and
Spanish editions' words)."""
MAX_WORDS = 150  # the passage size of the other converters
_URL_SAFE = "/:(),'!*;@$&=+~-._"


@dataclass
class DumpPage:
    """One page as read from a dump, before conversion. ``body`` is wikitext or HTML (``kind``)."""

    page_id: int
    revision_id: int
    title: str
    namespace: int
    body: str
    kind: Literal["wikitext", "html"]
    url: str | None = None  # the article's URL (without a section anchor)
    timestamp: str | None = None
    redirect: bool = False
    disambiguation: bool = False  # known from the dump's metadata (Enterprise HTML)
    categories: list[str] | None = None  # from the dump's metadata (Enterprise HTML); wikitext finds its own
    language: str | None = None  # the edition's language (the XML's <dbname>, Enterprise's in_language)
    counterparts: dict[str, str] | None = None  # its titles in other editions (the langlinks table)


@dataclass
class PageResult:
    """A converted page: its blocks, or why it was skipped."""

    page_id: int
    revision_id: int
    title: str
    blocks: list[Block] = field(default_factory=list)
    skipped: SkipReason | None = None
    language: str | None = None  # the page's edition (its block ids carry it)


def block_id(page_id: int, position: int, language: str | None = None) -> str:
    """The id of the ``position``-th block (from 0) of page ``page_id``; a page of an edition other
    than English carries its language first (``de-1234-0``), so that editions share an index."""
    return f"{language}-{page_id}-{position}" if language and language != "en" else f"{page_id}-{position}"


def article_url(base: str | None, title: str) -> str | None:
    """``base`` (a wiki's ``…/wiki/`` prefix) joined with the title in URL form."""
    if not base:
        return None
    return base + quote(title.replace(" ", "_"), safe=_URL_SAFE)


def section_url(url: str | None, section_path: str) -> str | None:
    """The article URL with the anchor of the innermost section of ``section_path``."""
    if not url or not section_path:
        return url
    anchor = section_path.rsplit(" > ", 1)[-1].replace(" ", "_")
    return f"{url.split('#', 1)[0]}#{quote(anchor, safe=_URL_SAFE)}"


def clean_line(text: str) -> str:
    """Collapse runs of whitespace and trim."""
    return " ".join(text.split())


class BlockWriter:
    """Collects one page's pieces in reading order and turns them into numbered blocks."""

    def __init__(self, page: DumpPage, *, max_words: int = MAX_WORDS, references: RefBook | None = None) -> None:
        self.page = page
        self.max_words = max_words
        self.references = references or RefBook()  # the page's references; text carries their markers
        self._cited: list[tuple[str, list[int]]] = []  # stretches of the pending prose and what they cite
        self.blocks: list[Block] = []
        self.categories: list[str] = list(page.categories or [])  # every block carries its article's categories
        self._path: list[tuple[int, str]] = []
        self._paragraphs: list[str] = []

    @property
    def section(self) -> str:
        """Start a section at ``level`` (deeper sections nest under it)."""
        return " > ".join(name for _, name in self._path)

    @property
    def in_apparatus(self) -> bool:
        """Whether the current section (or one it is nested in) is an apparatus section."""
        return any(name.lower() in APPARATUS_SECTIONS for _, name in self._path)

    def heading(self, level: int, title: str) -> None:
        """Start a section of heading ``level`` (2 for ``==``/``<h2>``) named ``title``."""
        self.flush()
        title = clean_line(title)
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        if title:
            self._path.append((level, title))

    def paragraph(self, text: str) -> None:
        """Add a prose paragraph (with reference markers) to the current section."""
        text, cited = split_marked(text)
        text = clean_line(text)
        if text:
            self._paragraphs.append(text)
            self._cited += cited

    def table(self, cells: list[list[Cell]], caption: str = "") -> None:
        """A table, given by its rows of cells as written (spans included), as markdown rows: cells
        spanning rows or columns are repeated in every position they cover, so each row reads
        whole; a first row of header cells is the header. Split into blocks of about ``max_words``
        words that each repeat the caption and header."""
        grid = [row for row in lay_out(cells) if row]
        header = None
        if grid and all(cell.head for cell in grid[0]):
            header = [cell.text for cell in grid.pop(0)]
        self._table([[cell.text for cell in row] for row in grid], header, caption)

    def _table(self, rows: list[list[str]], header: list[str] | None, caption: str) -> None:
        self.flush()
        rows = [[_cell(c) for c in row] for row in rows]
        rows = [row for row in rows if any(row)]
        if not rows and not header:
            return
        width = max([len(header or [])] + [len(row) for row in rows])
        top = [f"Table: {clean_line(caption)}"] if clean_line(caption) else []
        if header:
            head = [_cell(c) for c in header] + [""] * (width - len(header))
            top += [_row(head), _row(["---"] * width)]
        chunk: list[str] = []
        size = 0
        for row in rows:
            line = _row(row + [""] * (width - len(row)))
            words = len(line.split())
            if chunk and size + words > self.max_words:
                self._add("\n".join(top + chunk), "table")
                chunk, size = [], 0
            chunk.append(line)
            size += words
        if chunk or top:
            self._add("\n".join(top + chunk), "table")

    def infobox(self, fields: list[tuple[str, str]]) -> None:
        """An infobox as ``Field: value`` lines (empty values left out)."""
        lines = [f"{clean_line(k)}: {clean_line(v)}" for k, v in fields if clean_line(k) and clean_line(v)]
        if lines:
            self.flush()
            self._add("\n".join(lines), "infobox")

    def flush(self) -> None:
        """Pack the prose gathered so far into text blocks of the current section."""
        if self._paragraphs:
            for passage in pack_paragraphs(self._paragraphs, self.max_words):
                flat = " ".join(passage.split())
                numbers = [n for stretch, cited in self._cited if stretch[-60:].strip() in flat for n in cited]
                self._add(passage, "text", numbers)
            self._paragraphs = []
            self._cited = []

    def result(self) -> PageResult:
        """The page's blocks, numbered in reading order."""
        self.flush()
        page = self.page
        if not self.blocks:
            return PageResult(page.page_id, page.revision_id, page.title, skipped="empty", language=page.language)
        return PageResult(page.page_id, page.revision_id, page.title, blocks=self.blocks, language=page.language)

    def _add(self, content: str, kind: Literal["text", "table", "infobox"], numbers: list[int] | None = None) -> None:
        """A block of the page; the references it cites are ``numbers``, or those marked in ``content``."""
        content, cited = split_marked(content)
        numbers = list(numbers or []) + [n for _, found in cited for n in found]
        page, section = self.page, self.section
        self.blocks.append(
            Block(
                id=block_id(page.page_id, len(self.blocks), page.language),
                document_title=page.title,
                section_title=section,
                content=content,
                block_type=kind,
                url=section_url(page.url, section),
                last_edit_date=page.timestamp,
                page_id=page.page_id,
                revision_id=page.revision_id,
                categories=self.categories or None,
                citations=self.references.cited(numbers),
                language=page.language,
                counterparts=page.counterparts or None,
            )
        )


@dataclass
class Cell:
    """A table cell as written: its text, whether it is a header cell, and the rows and columns it spans."""

    text: str
    head: bool = False
    rows: int = 1
    cols: int = 1


MAX_SPAN = 100  # a larger rowspan/colspan (a typo, or a prank) is cut to this


def span(value: object) -> int:
    """A rowspan/colspan attribute as a count: at least 1, at most ``MAX_SPAN``; 1 when unreadable."""
    try:
        count = int(str(value).strip().strip("\"'"))
    except ValueError:
        return 1
    return min(max(count, 1), MAX_SPAN)


def lay_out(rows: list[list[Cell]]) -> list[list[Cell]]:
    """The table's grid, as HTML lays it out: each cell takes the next column free of cells
    spanning down from rows above, and fills ``cols`` columns of ``rows`` rows."""
    grid: list[list[Cell]] = []
    below: dict[int, tuple[Cell, int]] = {}  # column -> (cell spanning down into it, rows it still covers)

    def take_spanned(row: list[Cell]) -> None:
        while len(row) in below:
            cell, left = below.pop(len(row))
            if left > 1:
                below[len(row)] = (cell, left - 1)
            row.append(cell)

    for cells in rows:
        row: list[Cell] = []
        for cell in cells:
            take_spanned(row)
            for _ in range(cell.cols):
                if cell.rows > 1:
                    below[len(row)] = (cell, cell.rows - 1)
                row.append(cell)
        take_spanned(row)
        grid.append(row)
    return grid


def _cell(text: str) -> str:
    return clean_line(text).replace("|", "/")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def skipped(page: DumpPage, reason: SkipReason) -> PageResult:
    """The result of a page left out of the corpus, and why."""
    return PageResult(page.page_id, page.revision_id, page.title, skipped=reason, language=page.language)
