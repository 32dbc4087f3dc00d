"""MediaWiki wikitext to corpus blocks, with mwparserfromhell.

The page is parsed once; its top-level nodes are walked in order. Headings open sections (the
full path is kept), wikitables become markdown tables, ``{{Infobox …}}`` templates become
``Field: value`` lines, and everything else is rendered to plain prose: references, comments,
files, categories, interlanguage links and templates that render nothing are dropped; a few
inline templates that do render text (``convert``, ``lang``, ``nowrap``, dates, lists) keep it.
Each ``<ref>`` leaves a marker where it stands (:mod:`claire.ingestion.references`), so the block
writer gives every block the references its sentences cite.
Sections that hold only apparatus (References, External links, …) are left out.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from claire.ingestion.dumps.pages import BlockWriter, Cell, DumpPage, PageResult, skipped, span
from claire.ingestion.references import RefBook

_PAGE_REFS: ContextVar[RefBook | None] = ContextVar("page_refs", default=None)
"""The references of the page being converted (its ``<ref>``s render as markers into it)."""

DISAMBIGUATION_TEMPLATES = frozenset(
    ("disambiguation", "disambig", "dab", "disamb", "hndis", "geodis", "numberdis", "letter-number combination disambiguation",
     "place name disambiguation", "surname disambiguation", "school disambiguation", "mil-unit-dis", "species latin name disambiguation")
)
_DROP_TAGS = frozenset(("ref", "references", "gallery", "math", "score", "timeline", "syntaxhighlight", "source",
                        "templatedata", "graph", "mapframe", "maplink", "imagemap", "chem", "ce", "hiero", "style", "script"))
_DROP_LINK_PREFIXES = ("file:", "image:", "category:", "media:", ":category:")
_INTERWIKI = re.compile(r"^:?[a-z]{2,3}(-[a-z]+)?:")
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_NON_FACT_FIELDS = ("image", "alt", "caption", "signature", "logo", "module", "embed", "pushpin", "map", "footnotes",
                    "width", "border", "label position", "coordinates display",
                    # the German, French and Spanish editions' picture and layout fields
                    "bild", "bildbeschreibung", "bildunterschrift", "karte", "légende", "carte", "imagen",
                    "pie de imagen", "mapa", "tamaño")
_DATE_TEMPLATES = ("birth date", "death date", "start date", "end date", "film date", "birth-date", "death-date")
_LIST_TEMPLATES = ("plainlist", "plain list", "unbulleted list", "ubl", "hlist", "flatlist", "flat list", "bulleted list")
_FIRST_PARAM_TEMPLATES = ("nowrap", "nobr", "small", "big", "url", "marriage", "lang-", "transl", "abbr", "noitalic", "sic")


INFOBOX_PREFIXES = ("infobox", "ficha de ", "ficha ", "info/", "карточка", "faktamall", "infoboks", "tietolaatikko",
                    "taxobox")
"""How the editions name their infobox templates: ``Infobox`` (en, de: ``Infobox Bauwerk``, fr:
``Infobox Monument``, it, nl), ``Ficha de`` (es), ``Info/`` (pt), ``Карточка`` (ru), ``Faktamall``
(sv), ``Infoboks`` (da, no), ``Tietolaatikko`` (fi)."""


def is_infobox(name: str) -> bool:
    """Whether a template (its normalised name) is an infobox in any edition."""
    return name.startswith(INFOBOX_PREFIXES)


def template_name(template: Template) -> str:
    """A template's name, normalised (lower case, spaces for underscores)."""
    return " ".join(str(template.name).replace("_", " ").split()).lower()


def is_disambiguation(code: Wikicode) -> bool:
    """True when the page carries a disambiguation template or the ``__DISAMBIG__`` magic word."""
    if "__DISAMBIG__" in str(code):
        return True
    for template in code.filter_templates(recursive=False):
        name = template_name(template)
        if name in DISAMBIGUATION_TEMPLATES or name.endswith(" disambiguation"):
            return True
    return False


def convert(page: DumpPage, *, max_words: int = 150) -> PageResult:
    """The blocks of one wikitext page, or the reason it is skipped."""
    if page.namespace != 0:
        return skipped(page, "namespace")
    if page.redirect or page.body.lstrip()[:9].upper() == "#REDIRECT":
        return skipped(page, "redirect")
    code = mwparserfromhell.parse(page.body)
    if page.disambiguation or is_disambiguation(code):
        return skipped(page, "disambiguation")
    writer = BlockWriter(page, max_words=max_words, references=RefBook.of_page(code))
    writer.categories = writer.categories or _categories(code)
    token = _PAGE_REFS.set(writer.references)
    try:
        return _convert(code, writer)
    finally:
        _PAGE_REFS.reset(token)


def _convert(code: Wikicode, writer: BlockWriter) -> PageResult:
    prose: list[str] = []
    apparatus = False

    def end_prose() -> None:
        text = _MAGIC_WORD.sub("", "".join(prose))
        prose.clear()
        if not apparatus:
            for paragraph in _PARAGRAPH_BREAK.split(text):
                writer.paragraph(paragraph)

    for node in code.nodes:
        if isinstance(node, Heading):
            end_prose()
            title = _render(node.title).strip()
            writer.heading(node.level, title)
            apparatus = writer.in_apparatus
        elif apparatus:
            continue
        elif isinstance(node, Tag) and node.tag == "table":
            end_prose()
            _table(node, writer)
        elif isinstance(node, Template) and is_infobox(template_name(node)):
            end_prose()
            writer.infobox(_infobox_fields(node))
        else:
            prose.append(_render_node(node))
    end_prose()
    return writer.result()


def _categories(code: Wikicode) -> list[str]:
    """The categories a page's wikitext puts it in (``[[Category:Name|sort key]]``), in order."""
    found = []
    for link in code.filter_wikilinks(recursive=True):
        target = str(link.title).strip()
        if target.lower().startswith("category:"):
            name = " ".join(target.split(":", 1)[1].replace("_", " ").split())
            if name and name not in found:
                found.append(name)
    return found


def _infobox_fields(template: Template) -> list[tuple[str, str]]:
    fields = []
    for param in template.params:
        if not param.showkey:
            continue
        key = " ".join(str(param.name).replace("_", " ").split())
        if not key or key.lower().startswith(_NON_FACT_FIELDS):
            continue
        value = "; ".join(line.strip(" *#:") for line in _render(param.value).splitlines() if line.strip(" *#:"))
        if value:
            fields.append((key[:1].upper() + key[1:], value))
    return fields


def _table(tag: Tag, writer: BlockWriter) -> None:
    caption = ""
    rows: list[list[Cell]] = []
    loose: list[Cell] = []  # cells before the first |- belong to an implicit first row
    for node in tag.contents.nodes:
        if not isinstance(node, Tag):
            continue
        if node.tag in ("td", "th"):
            if (node.wiki_markup or "").startswith("|+") or str(node).lstrip().startswith("|+"):
                caption = _render(node.contents).lstrip("+ ")
            else:
                loose.append(_table_cell(node))
        elif node.tag == "tr":
            cells = [_table_cell(c) for c in node.contents.nodes if isinstance(c, Tag) and c.tag in ("td", "th")]
            if cells:
                rows.append(cells)
        elif node.tag == "caption":
            caption = _render(node.contents)
    if loose:
        rows.insert(0, loose)
    writer.table(rows, caption)


def _table_cell(node: Tag) -> Cell:
    def attribute(name: str) -> object:
        return node.get(name).value if node.has(name) else 1

    return Cell(_render(node.contents), node.tag == "th", span(attribute("rowspan")), span(attribute("colspan")))


def _render(code: Wikicode | None) -> str:
    if code is None:
        return ""
    return "".join(_render_node(node) for node in code.nodes)


def _render_node(node: Node) -> str:
    if isinstance(node, Text):
        return str(node)
    if isinstance(node, HTMLEntity):
        return node.normalize()
    if isinstance(node, (Comment, Argument)):
        return ""
    if isinstance(node, Wikilink):
        target = str(node.title).strip().lower()
        if target.startswith(_DROP_LINK_PREFIXES) or _INTERWIKI.match(target):
            return ""
        return _render(node.text) if node.text is not None else _render(node.title).split("#", 1)[0]
    if isinstance(node, ExternalLink):
        return _render(node.title) if node.title is not None else ""
    if isinstance(node, Template):
        return _template_text(node)
    if isinstance(node, Tag):
        tag = str(node.tag).lower()
        if tag == "ref":
            book = _PAGE_REFS.get()
            return book.mark(node) if book is not None else ""
        if tag in _DROP_TAGS or tag == "table":
            return ""
        if tag == "br":
            return "\n"
        if tag in ("li", "dt", "dd") and node.wiki_markup:
            return "\n"
        if node.self_closing:
            return ""
        return _render(node.contents)
    if isinstance(node, Heading):
        return "\n\n" + _render(node.title) + "\n\n"
    return ""


def _positional(template: Template) -> list[str]:
    return [_render(p.value).strip() for p in template.params if not p.showkey]


def _template_text(template: Template) -> str:
    """What a template renders as prose, for the few that carry text; the rest render nothing."""
    name = template_name(template)
    args = _positional(template)
    if name == "convert" and args:
        return " ".join(args[:2])
    if name in ("lang", "langx") and len(args) >= 2:
        return args[-1] if name == "lang" else args[1]
    if name.startswith(_DATE_TEMPLATES):
        numbers = [a for a in args if a.isdigit()][:3]
        return "-".join(n.zfill(2) if i else n for i, n in enumerate(numbers))
    if name in _LIST_TEMPLATES:
        items = [line.lstrip("*# ").strip() for a in args for line in a.splitlines()]
        return ", ".join(item for item in items if item)
    if name.startswith(_FIRST_PARAM_TEMPLATES) and args:
        return args[-1] if name.startswith("lang-") else args[0]
    return ""
