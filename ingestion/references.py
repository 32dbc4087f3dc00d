"""The references a Wikipedia article cites, read from its wikitext or its HTML.

- :func:`reference_from_wikitext` — one ``<ref>``'s content as a :class:`~claire.domain.Reference`:
  a citation template (``{{cite web|news|book|journal|…}}``, ``{{citation}}``) gives url, title,
  site or publisher, date and kind; a bare URL or ``[url title]`` link gives a web reference;
  plain text (``Smith 2001, p. 4``) an ``other`` reference titled by it;
- :class:`RefBook` — the references of one page: named refs are defined once and reused
  (``<ref name="a" />``, defined before or after the use, or in ``{{reflist|refs=…}}``), and each
  use is given a marker that the converters leave in the text and :func:`split_marked` takes out
  again, so every sentence knows what it cites;
- :func:`reference_from_html` — one entry of a Parsoid reference list.

Dates are kept as ISO dates where they can be read (``14 March 2025``, ``March 2025``, ``2025``).
"""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass, field

import mwparserfromhell
from mwparserfromhell.nodes import Tag, Template
from mwparserfromhell.wikicode import Wikicode

from claire.domain import Reference, ReferenceKind

MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"
"""A reference's marker in converted text: ``\\ue000`` + its number + ``\\ue001`` (private-use
characters, so no article text holds them)."""
_MARK = re.compile(f"{MARK_OPEN}(\\d+){MARK_CLOSE}")
_URL = re.compile(r"https?://[^\s\]|<>\"]+", re.IGNORECASE)

_SITE_PARAMS = ("website", "work", "newspaper", "magazine", "journal", "periodical", "publisher", "agency", "via", "site")
_KINDS: dict[str, ReferenceKind] = {"web": "web", "news": "news", "book": "book", "journal": "journal",
                                    "magazine": "news", "press release": "web", "encyclopedia": "book", "report": "web",
                                    "thesis": "book", "conference": "journal", "av media": "web", "episode": "other"}
def iso_date(text: str | None, language: str = "en") -> str | None:
    """A date as written in a citation (in ``language``'s way: ``12. März 2024``; English month
    names are always read), as an ISO date (``2025-03-14``, ``2025-03``, ``2025``) when it can be
    read, else the text itself (None for nothing)."""
    from claire.languages import dates_in

    text = " ".join((text or "").replace(",", ", ").split()).replace(" ,", ",").strip()
    if not text:
        return None
    found = dates_in(text, language)
    if found:
        year, month, day = found[0][2]
        return f"{year:04d}-{month:02d}-{day:02d}" if day else f"{year:04d}-{month:02d}"
    year = re.search(r"\b(1[5-9]\d\d|20\d\d)\b", text)
    return year.group(1) if year else text


def _plain(code: Wikicode | str | None) -> str:
    if code is None:
        return ""
    text = mwparserfromhell.parse(str(code)).strip_code(normalize=True, collapse=True)
    return " ".join(text.split())


def _param(template: Template, *names: str) -> str:
    for name in names:
        if template.has(name):
            value = _plain(template.get(name).value)
            if value:
                return value
    return ""


@dataclass(frozen=True)
class EditionCitation:
    """An edition's own citation template: its kind, its language and its parameters' names."""

    kind: ReferenceKind
    language: str
    url: tuple[str, ...]
    title: tuple[str, ...]
    site: tuple[str, ...]
    date: tuple[str, ...]


EDITION_CITATIONS: dict[str, EditionCitation] = {
    "internetquelle": EditionCitation("web", "de", ("url", "archiv-url"), ("titel", "titelerg"),
                                      ("werk", "hrsg", "website"), ("datum", "abruf")),
    "literatur": EditionCitation("book", "de", ("Online", "online"), ("Titel", "titel"),
                                 ("Sammelwerk", "Verlag", "Hrsg", "verlag"), ("Datum", "Jahr", "datum", "jahr")),
    "lien web": EditionCitation("web", "fr", ("url", "archive-url"), ("titre",), ("site", "éditeur", "périodique"),
                                ("date", "consulté le")),
    "article": EditionCitation("news", "fr", ("lire en ligne", "url"), ("titre",), ("périodique", "journal", "éditeur"),
                               ("date", "année")),
    "ouvrage": EditionCitation("book", "fr", ("lire en ligne", "url"), ("titre",), ("éditeur",), ("année", "date")),
    "cita web": EditionCitation("web", "es", ("url", "urlarchivo"), ("título", "titulo"), ("obra", "sitioweb", "editorial"),
                                ("fecha", "fechaacceso")),
    "cita noticia": EditionCitation("news", "es", ("url",), ("título", "titulo"), ("periódico", "publicación", "obra"),
                                    ("fecha",)),
    "cita libro": EditionCitation("book", "es", ("url",), ("título", "titulo"), ("editorial",), ("año", "fecha")),
}
"""Citation templates of the German, French and Spanish editions, read like ``{{cite …}}``."""


def _from_edition_template(template: Template, form: EditionCitation) -> Reference:
    url = _param(template, *form.url)
    return Reference(url=url if _URL.fullmatch(url or "") else None, title=_param(template, *form.title),
                     site=_param(template, *form.site), date=iso_date(_param(template, *form.date), form.language),
                     kind=form.kind)


def _from_template(template: Template) -> Reference | None:
    name = " ".join(str(template.name).replace("_", " ").split()).lower()
    if name in EDITION_CITATIONS:
        return _from_edition_template(template, EDITION_CITATIONS[name])
    if not (name.startswith("cite") or name in ("citation", "cite", "harvnb", "sfn")):
        return None
    if name in ("harvnb", "sfn"):  # a short footnote: the work is named by author and year
        parts = [_plain(p.value) for p in template.params if not p.showkey]
        return Reference(title=" ".join(parts), kind="other") if parts else None
    kind = _KINDS.get(name.removeprefix("cite").strip(), "web" if template.has("url") else "other")
    url = _param(template, "url", "archive-url", "archiveurl")
    return Reference(
        url=url if _URL.fullmatch(url or "") else None, title=_param(template, "title", "chapter", "trans-title"),
        site=_param(template, *_SITE_PARAMS), date=iso_date(_param(template, "date", "year", "publication-date")),
        kind=kind,
    )


def reference_from_wikitext(content: str | Wikicode | None) -> Reference | None:
    """The reference a ``<ref>``'s content gives (see the module docstring), None when it is empty."""
    code = content if isinstance(content, Wikicode) else mwparserfromhell.parse(str(content or ""))
    for template in code.filter_templates(recursive=False):
        found = _from_template(template)
        if found is not None and (found.url or found.title or found.site):
            return found
    for link in code.filter_external_links(recursive=True):
        url = str(link.url).strip()
        if _URL.fullmatch(url):
            return Reference(url=url, title=_plain(link.title) if link.title is not None else "", kind="web")
    text = _plain(code)
    bare = _URL.search(text)
    if bare:
        return Reference(url=bare.group(0), kind="web")
    return Reference(title=text[:300], kind="other") if text else None


@dataclass
class RefBook:
    """The references of one page: each distinct work once, with named refs resolved."""

    references: list[Reference] = field(default_factory=list)
    named: dict[str, int] = field(default_factory=dict)
    by_key: dict[Any, int] = field(default_factory=dict)  # each work's number, so adding one is a look-up

    @classmethod
    def of_page(cls, code: Wikicode) -> "RefBook":
        """A book with every *named* ref of the page defined up front, so a reuse placed before its
        definition (or a definition kept in the reference list) still resolves."""
        book = cls()
        for tag in code.filter_tags(recursive=True, matches=lambda node: str(node.tag).lower() == "ref"):
            name = book._name(tag)
            if name and not tag.self_closing and name not in book.named:
                reference = reference_from_wikitext(tag.contents)
                if reference is not None:
                    book.named[name] = book.add(reference)
        return book

    @staticmethod
    def _name(tag: Tag) -> str:
        return str(tag.get("name").value).strip().strip("\"'") if tag.has("name") else ""

    def add(self, reference: Reference) -> int:
        """The number of ``reference`` in the book (added when it is new)."""
        key = reference.key()
        if key not in self.by_key:
            self.by_key[key] = len(self.references)
            self.references.append(reference)
        return self.by_key[key]

    def mark(self, tag: Tag) -> str:
        """The marker of a ``<ref>`` where it stands ("" when it cites nothing that can be read)."""
        name = self._name(tag)
        if name and name in self.named:
            number: int | None = self.named[name]
        else:
            reference = None if tag.self_closing else reference_from_wikitext(tag.contents)
            number = None if reference is None else self.add(reference)
        return "" if number is None else self.marker(number)

    @staticmethod
    def marker(number: int) -> str:
        """The marker of reference ``number`` in converted text."""
        return f"{MARK_OPEN}{number}{MARK_CLOSE}"

    def cited(self, numbers: list[int]) -> list[Reference] | None:
        """The references of some marker numbers, each once (None for none)."""
        found = [self.references[n] for n in dict.fromkeys(numbers) if 0 <= n < len(self.references)]
        return found or None


def split_marked(text: str) -> tuple[str, list[tuple[str, list[int]]]]:
    """Text without its reference markers, and its cited stretches: each stretch of text that
    ends at one or more markers, with their numbers (a marker cites the text before it, back to
    the previous marker)."""
    stretches: list[tuple[str, list[int]]] = []
    clean: list[str] = []
    start = 0
    for match in _MARK.finditer(text):
        piece = text[start:match.start()]
        clean.append(piece)
        start = match.end()
        if piece.strip() or not stretches:
            stretches.append((" ".join(piece.split()), [int(match.group(1))]))
        else:  # markers side by side cite the same stretch
            stretches[-1][1].append(int(match.group(1)))
    clean.append(text[start:])
    return "".join(clean), stretches


def strip_marks(text: str) -> str:
    """Text without reference markers."""
    return _MARK.sub("", text)


def reference_from_html(item: object) -> Reference | None:
    """The reference of one Parsoid reference-list entry (an lxml element): its citation's
    ``<cite class="citation web|news|book|journal">`` with the first external link, or a bare
    external link, or its text."""
    get_text = getattr(item, "text_content", None)
    if get_text is None:
        return None
    cite = next(iter(item.xpath(".//cite")), None)  # type: ignore[attr-defined]
    scope = cite if cite is not None else item
    links = [a for a in scope.xpath(".//a[@href]") if str(a.get("href", "")).lower().startswith(("http://", "https://"))]
    classes = str(cite.get("class", "")).split() if cite is not None else []
    kind: ReferenceKind = next((_KINDS[c] for c in classes if c in _KINDS), "web" if links else "other")
    text = " ".join(str(get_text()).split())
    if not text and not links:
        return None
    title = " ".join(links[0].text_content().split()) if links else ""
    quoted = re.search(r"[\"“](.+?)[\"”]", text)
    if quoted:
        title = quoted.group(1).rstrip(".,")
    italics = [" ".join(i.text_content().split()) for i in scope.xpath(".//i")]
    year = re.search(r"\b(?:\d{1,2} )?(?:January|February|March|April|May|June|July|August|September|October|November|December)?"
                     r"\s?(?:\d{1,2}, )?(1[5-9]\d\d|20\d\d)\b", text)
    return Reference(url=links[0].get("href") if links else None, title=title or text[:300],
                     site=next((i for i in italics if i and i != title), ""),
                     date=iso_date(year.group(0)) if year else None, kind=kind)
