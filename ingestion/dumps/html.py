"""Wikimedia Enterprise (Parsoid) HTML to corpus blocks, with lxml.

The article body is walked in document order: ``<h2>``–``<h6>`` open sections (full path kept),
``<p>``, list items and quotes are prose, ``table.infobox`` becomes ``Field: value`` lines and
other tables (wikitables) markdown rows with the header kept. Edit links, styles, maths,
navigation boxes, hatnotes, maintenance boxes, figures and the apparatus sections (References,
External links, …) never reach the text; a reference mark (``<sup class="reference">``) leaves a
marker that the block writer turns into the block's references, read from the page's reference
list (:func:`~claire.ingestion.references.reference_from_html`).
"""

from __future__ import annotations

from contextvars import ContextVar

from lxml import html as lxml_html
from lxml.etree import ParserError
from lxml.html import HtmlElement

from claire.ingestion.dumps.pages import BlockWriter, Cell, DumpPage, PageResult, clean_line, skipped, span
from claire.ingestion.references import RefBook, reference_from_html

_PAGE_NOTES: ContextVar[dict[str, int] | None] = ContextVar("page_notes", default=None)
"""The page being converted: each reference-list entry's id (``cite_note-…``) and its number in the page's book."""

_SKIP_TAGS = frozenset(("style", "script", "link", "meta", "figure", "math", "img", "audio", "video", "noscript",
                        "head", "title"))
_SKIP_CLASSES = frozenset((
    "reference", "mw-ref", "mw-editsection", "noprint", "navbox", "navbox-styles", "hatnote", "metadata", "ambox",
    "mw-references-wrap", "reflist", "references", "shortdescription", "mwe-math-element", "sistersitebox",
    "thumb", "mw-empty-elt", "portalbox", "side-box", "dmbox", "mbox-small", "toc", "catlinks",
))
_PROSE = frozenset(("p", "li", "dd", "dt", "blockquote", "pre"))
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


def _classes(el: HtmlElement) -> set[str]:
    return set((el.get("class") or "").split())


def _skipped(el: HtmlElement) -> bool:
    if not isinstance(el.tag, str):  # comments and processing instructions
        return True
    tag = el.tag.lower()
    if tag == "sup":
        return "reference" in _classes(el) or "noprint" in _classes(el) or el.get("typeof") == "mw:Extension/ref"
    if tag in _SKIP_TAGS:
        return True
    if el.get("typeof", "").startswith("mw:Extension/ref"):
        return True
    return bool(_classes(el) & _SKIP_CLASSES) or el.get("role") == "note" or el.get("id") == "disambigbox"


def _is_reference_mark(el: HtmlElement) -> bool:
    return (isinstance(el.tag, str) and el.tag.lower() == "sup"
            and ("reference" in _classes(el) or el.get("typeof", "").startswith("mw:Extension/ref")))


def _marker(el: HtmlElement) -> str:
    notes = _PAGE_NOTES.get() or {}
    for link in el.iter("a"):
        number = notes.get((link.get("href") or "").rpartition("#")[2])
        if number is not None:
            return RefBook.marker(number)
    return ""


def reference_list(root: HtmlElement) -> tuple[RefBook, dict[str, int]]:
    """The page's references, read from its reference list(s), and each entry's id's number."""
    book, notes = RefBook(), {}
    for item in root.xpath('//ol[contains(concat(" ", normalize-space(@class), " "), " references ")]/li[@id]'):
        reference = reference_from_html(item)
        if reference is not None:
            notes[item.get("id")] = book.add(reference)
    return book, notes


def text_of(el: HtmlElement) -> str:
    """The visible text of ``el`` without edit links and other apparatus; a reference mark leaves
    its marker (when the page's reference list names it)."""
    parts = [el.text or ""]
    for child in el:
        if _is_reference_mark(child):
            parts.append(_marker(child))
        elif not _skipped(child):
            parts.append(" " if isinstance(child.tag, str) and child.tag.lower() == "br" else text_of(child))
        parts.append(child.tail or "")
    return "".join(parts)


def is_disambiguation(root: HtmlElement) -> bool:
    """Whether the page is a disambiguation page."""
    for el in root.iter("meta", "link"):
        if "mw:PageProp/disambiguation" in ((el.get("property") or "") + (el.get("rel") or "")):
            return True
    return bool(root.xpath('//*[@id="disambigbox" or contains(@class, "dmbox-disambig")]'))


def _is_redirect(root: HtmlElement) -> bool:
    return any("mw:PageProp/redirect" in (el.get("rel") or "") for el in root.iter("link"))


def convert(page: DumpPage, *, max_words: int = 150) -> PageResult:
    """The blocks of one HTML page, or the reason it is skipped."""
    if page.namespace != 0:
        return skipped(page, "namespace")
    if page.redirect:
        return skipped(page, "redirect")
    if not page.body.strip():
        return skipped(page, "empty")
    try:
        root = lxml_html.document_fromstring(page.body)
    except (ParserError, ValueError):
        return skipped(page, "empty")
    if _is_redirect(root):
        return skipped(page, "redirect")
    if page.disambiguation or is_disambiguation(root):
        return skipped(page, "disambiguation")
    book, notes = reference_list(root)
    writer = BlockWriter(page, max_words=max_words, references=book)
    token = _PAGE_NOTES.set(notes)
    try:
        body = root.find("body")
        _walk(body if body is not None else root, writer)
        return writer.result()
    finally:
        _PAGE_NOTES.reset(token)


def _walk(el: HtmlElement, writer: BlockWriter) -> None:
    for child in el:
        if _skipped(child):
            continue
        tag = child.tag.lower()
        if tag in _HEADINGS:
            writer.heading(_HEADINGS[tag], text_of(child))
        elif writer.in_apparatus:
            continue
        elif tag == "table":
            if "infobox" in _classes(child):
                writer.infobox(_infobox_fields(child))
            else:
                _table(child, writer)
        elif tag in _PROSE:
            nested = [c for c in child if isinstance(c.tag, str) and c.tag.lower() in ("ul", "ol", "dl", "table")]
            if nested and tag == "li":  # an item with a sub-list: its own line, then the sub-items
                own = [child.text or ""] + [text_of(c) + (c.tail or "") for c in child
                                            if c not in nested and not _skipped(c)]
                writer.paragraph("".join(own))
                for sub in nested:
                    _walk(sub, writer)
            else:
                writer.paragraph(text_of(child))
        else:
            _walk(child, writer)


def _rows(table: HtmlElement) -> list[HtmlElement]:
    """The rows of ``table`` itself (through thead/tbody/tfoot), not of tables nested in cells."""
    rows = []
    for part in table:
        if not isinstance(part.tag, str):
            continue
        if part.tag == "tr":
            rows.append(part)
        elif part.tag in ("thead", "tbody", "tfoot"):
            rows.extend(r for r in part if r.tag == "tr")
    return rows


def _cells(row: HtmlElement) -> list[HtmlElement]:
    return [c for c in row if isinstance(c.tag, str) and c.tag in ("th", "td")]


def _infobox_fields(table: HtmlElement) -> list[tuple[str, str]]:
    fields = []
    for row in _rows(table):
        cells = _cells(row)
        if len(cells) == 2 and cells[0].tag == "th":
            fields.append((text_of(cells[0]), _cell_text(cells[1])))
    return fields


def _cell_text(cell: HtmlElement) -> str:
    items = [clean_line(text_of(li)) for li in cell.iter("li")]
    if items:
        return ", ".join(i for i in items if i)
    return text_of(cell)


def _table(table: HtmlElement, writer: BlockWriter) -> None:
    if _skipped(table):
        return
    caption_el = table.find("caption")
    caption = text_of(caption_el) if caption_el is not None else ""
    rows = [[Cell(_cell_text(c), c.tag == "th", span(c.get("rowspan", 1)), span(c.get("colspan", 1))) for c in _cells(r)]
            for r in _rows(table)]
    writer.table(rows, caption)
