"""Small Wikipedia dumps written on the fly, in both published formats, for tests and benchmarks.

:func:`write_xml_dump` writes a MediaWiki XML export (schema 0.11, optionally bz2-compressed) and
:func:`write_html_dump` a Wikimedia Enterprise HTML NDJSON file (plain, ``.json.gz`` or
``.tar.gz``) from the same :class:`WikiPage` list. :func:`sample_pages` is the fixed set the
tests check block by block (infobox, wikitable with a header row, nested sections, references,
a redirect, a disambiguation page, a Talk page, non-ASCII titles); :func:`generated_pages`
makes any number of realistic-looking articles for benchmarks.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from xml.sax.saxutils import escape

BASE = "https://en.wikipedia.org/wiki/"


@dataclass(frozen=True)
class WikiPage:
    """One page in both forms: wikitext for the XML export, rendered HTML for the Enterprise dump."""

    page_id: int
    revision_id: int
    title: str
    wikitext: str
    html: str
    namespace: int = 0
    redirect: str | None = None  # the redirect target

    def revised(self, revision_id: int, wikitext: str, html: str) -> WikiPage:
        """The same page at a later revision with other text."""
        return replace(self, revision_id=revision_id, wikitext=wikitext, html=html)


def write_xml_dump(path: Path, pages: Iterable[WikiPage]) -> Path:
    """A MediaWiki XML export of ``pages``, written as a stream; bz2-compressed when ``path`` ends in ``.bz2``."""
    opener = bz2.open if path.name.endswith(".bz2") else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(
            '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">\n'
            "  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>enwiki</dbname>\n"
            f"    <base>{BASE}Main_Page</base>\n  </siteinfo>\n"
        )
        for page in pages:
            redirect = f'    <redirect title="{escape(page.redirect, {chr(34): "&quot;"})}" />\n' if page.redirect else ""
            out.write(
                f"  <page>\n    <title>{escape(page.title)}</title>\n    <ns>{page.namespace}</ns>\n"
                f"    <id>{page.page_id}</id>\n{redirect}    <revision>\n      <id>{page.revision_id}</id>\n"
                "      <timestamp>2026-10-01T12:00:00Z</timestamp>\n      <model>wikitext</model>\n"
                f'      <format>text/x-wiki</format>\n      <text bytes="{len(page.wikitext.encode())}" '
                f'xml:space="preserve">{escape(page.wikitext)}</text>\n    </revision>\n  </page>\n'
            )
        out.write("</mediawiki>\n")
    return path


def html_record(page: WikiPage) -> dict:
    """The Enterprise-HTML NDJSON record of a page."""
    return {
        "name": page.title,
        "identifier": page.page_id,
        "date_modified": "2026-10-01T12:00:00Z",
        "version": {"identifier": page.revision_id},
        "url": BASE + page.title.replace(" ", "_"),
        "namespace": {"identifier": page.namespace},
        "in_language": {"identifier": "en"},
        "article_body": {"html": page.html, "wikitext": page.wikitext},
    }


def write_html_dump(path: Path, pages: Iterable[WikiPage]) -> Path:
    """An Enterprise HTML dump of ``pages`` (redirects are not articles there, so they are left
    out): NDJSON, gzip'd NDJSON (``.json.gz``) or a tar.gz holding NDJSON files."""
    name = path.name
    if not name.endswith(".tar.gz"):  # written as a stream
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as out:
            for page in pages:
                if not page.redirect:
                    out.write(json.dumps(html_record(page), ensure_ascii=False) + "\n")
        return path
    lines = [json.dumps(html_record(p), ensure_ascii=False) for p in pages if not p.redirect]
    if name.endswith(".tar.gz"):
        half = len(lines) // 2
        with tarfile.open(path, "w:gz") as archive:
            for number, chunk in enumerate((lines[:half], lines[half:])):
                payload = ("\n".join(chunk) + "\n").encode("utf-8")
                info = tarfile.TarInfo(f"enwiki_namespace_0_{number}.ndjson")
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
    return path


def article_html(title: str, sections: str, head: str = "") -> str:
    """A minimal Enterprise-HTML article: ``sections`` inside its body."""
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"/><title>{escape(title)}</title>{head}</head>'
            f"<body>{sections}</body></html>")


_REF = '<sup class="mw-ref reference" typeof="mw:Extension/ref"><a href="#cite_note-1">[1]</a></sup>'

MARIE_WIKITEXT = """{{Short description|Polish-French physicist}}
{{Infobox scientist
| name = Marie Curie
| birth_date = {{birth date|1867|11|7}}
| birth_place = [[Warsaw]], [[Congress Poland]]
| field = [[Physics]], [[Chemistry]]<ref>Nobel archive.</ref>
| spouse = [[Pierre Curie]] (m. 1895)
| image = Marie Curie c1920.jpg
}}
'''Marie Skłodowska-Curie''' (7 November 1867 – 4 July 1934) was a [[Poland|Polish]] and naturalised-French [[physicist]] and [[chemist]].<ref name="nobel">{{cite web|url=https://example.org|title=Nobel}}</ref> She was the first woman to win a [[Nobel Prize]].<!-- editors: keep this short -->

[[File:Marie Curie c1920.jpg|thumb|Curie in 1920]]
She won prizes in two sciences.{{citation needed|date=May 2020}}

== Life ==
=== Early years ===
She was born in [[Warsaw]] on 7 November 1867.<ref>Quinn 1995, p. 12.</ref>

=== Paris ===
In 1891 she moved to [[Paris]], where she studied at the [[University of Paris]].

== Awards ==
{| class="wikitable"
|+ Nobel Prizes
! Year !! Prize !! Shared with
|-
| 1903 || [[Nobel Prize in Physics|Physics]] || Pierre Curie, [[Henri Becquerel]]
|-
| 1911 || Chemistry<ref>Nobel 1911.</ref> || —
|}

== References ==
{{Reflist}}
* Quinn, Susan (1995). ''Marie Curie: A Life''.

[[Category:1867 births]]
[[pl:Maria Skłodowska-Curie]]
"""

MARIE_HTML = article_html("Marie Curie", (
    '<section data-mw-section-id="0"><div class="shortdescription nomobile noexcerpt noprint searchaux" style="display:none">Polish-French physicist</div>'
    '<table class="infobox biography vcard"><tbody><tr><th colspan="2" class="infobox-above">Marie Curie</th></tr>'
    '<tr><td colspan="2" class="infobox-image"><span typeof="mw:File"><img src="x.jpg"/></span></td></tr>'
    '<tr><th scope="row" class="infobox-label">Born</th><td class="infobox-data">1867-11-07 <a href="./Warsaw">Warsaw</a>, <a href="./Congress_Poland">Congress Poland</a></td></tr>'
    f'<tr><th scope="row" class="infobox-label">Field</th><td class="infobox-data"><a href="./Physics">Physics</a>, <a href="./Chemistry">Chemistry</a>{_REF}</td></tr>'
    '<tr><th scope="row" class="infobox-label">Spouse</th><td class="infobox-data"><a href="./Pierre_Curie">Pierre Curie</a> (m. 1895)</td></tr>'
    '</tbody></table>'
    f'<p><b>Marie Skłodowska-Curie</b> (7 November 1867 – 4 July 1934) was a <a href="./Poland">Polish</a> and naturalised-French <a href="./Physicist">physicist</a> and <a href="./Chemist">chemist</a>.{_REF} She was the first woman to win a <a href="./Nobel_Prize">Nobel Prize</a>.<!-- editors: keep this short --></p>'
    '<figure typeof="mw:File/Thumb"><img src="x.jpg"/><figcaption>Curie in 1920</figcaption></figure>'
    '<p>She won prizes in two sciences.<sup class="noprint Inline-Template Template-Fact"><i>[citation needed]</i></sup></p></section>'
    '<section data-mw-section-id="1"><h2 id="Life">Life<span class="mw-editsection">[edit]</span></h2>'
    f'<section data-mw-section-id="2"><h3 id="Early_years">Early years</h3><p>She was born in <a href="./Warsaw">Warsaw</a> on 7 November 1867.{_REF}</p></section>'
    '<section data-mw-section-id="3"><h3 id="Paris">Paris</h3><p>In 1891 she moved to <a href="./Paris">Paris</a>, where she studied at the <a href="./University_of_Paris">University of Paris</a>.</p></section></section>'
    '<section data-mw-section-id="4"><h2 id="Awards">Awards</h2><table class="wikitable"><caption>Nobel Prizes</caption><tbody>'
    '<tr><th>Year</th><th>Prize</th><th>Shared with</th></tr>'
    '<tr><td>1903</td><td><a href="./Nobel_Prize_in_Physics">Physics</a></td><td>Pierre Curie, <a href="./Henri_Becquerel">Henri Becquerel</a></td></tr>'
    f'<tr><td>1911</td><td>Chemistry{_REF}</td><td>—</td></tr></tbody></table></section>'
    '<section data-mw-section-id="5"><h2 id="References">References</h2><div class="mw-references-wrap"><ol class="references"><li>Nobel archive.</li></ol></div>'
    '<ul><li>Quinn, Susan (1995). <i>Marie Curie: A Life</i>.</li></ul></section>'
))

ZURICH_WIKITEXT = """'''Zürich''' is the largest city in [[Switzerland]].

== Geography ==
Zürich lies at the north-western end of [[Lake Zurich]].

== Geography ==
=== Climate ===
The city has an oceanic climate with about {{convert|1134|mm|in}} of rain a year.
"""

ZURICH_HTML = article_html("Zürich", (
    '<section data-mw-section-id="0"><p><b>Zürich</b> is the largest city in <a href="./Switzerland">Switzerland</a>.</p></section>'
    '<section data-mw-section-id="1"><h2 id="Geography">Geography</h2><p>Zürich lies at the north-western end of <a href="./Lake_Zurich">Lake Zurich</a>.</p></section>'
    '<section data-mw-section-id="2"><h2 id="Geography_2">Geography</h2><section data-mw-section-id="3"><h3 id="Climate">Climate</h3>'
    '<p>The city has an oceanic climate with about 1134 mm of rain a year.</p></section></section>'
))

MERCURY_WIKITEXT = """'''Mercury''' may refer to:
* [[Mercury (planet)]], the closest planet to the Sun
* [[Mercury (element)]], a chemical element
{{disambiguation}}
"""

MERCURY_HTML = article_html("Mercury", (
    '<section data-mw-section-id="0"><p><b>Mercury</b> may refer to:</p><ul><li><a href="./Mercury_(planet)">Mercury (planet)</a>, the closest planet to the Sun</li></ul>'
    '<table id="disambigbox" class="metadata plainlinks dmbox dmbox-disambig"><tbody><tr><td>This disambiguation page lists articles.</td></tr></tbody></table></section>'
), head='<meta property="mw:PageProp/disambiguation"/>')


def sample_pages() -> list[WikiPage]:
    """The fixed test set: two articles, one that is empty after cleaning, a redirect, a
    disambiguation page and a Talk page."""
    return [
        WikiPage(101, 5001, "Marie Curie", MARIE_WIKITEXT, MARIE_HTML),
        WikiPage(102, 5002, "Zürich", ZURICH_WIKITEXT, ZURICH_HTML),
        WikiPage(103, 5003, "Curie", "#REDIRECT [[Marie Curie]]", "", redirect="Marie Curie"),
        WikiPage(104, 5004, "Mercury", MERCURY_WIKITEXT, MERCURY_HTML),
        WikiPage(105, 5005, "Talk:Marie Curie", "== Sources ==\nThis article needs more sources. ~~~~",
                 article_html("Talk:Marie Curie", "<p>This article needs more sources.</p>"), namespace=1),
        WikiPage(106, 5006, "Stub page", "{{stub}}\n<!-- nothing here yet -->\n[[Category:Stubs]]",
                 article_html("Stub page", '<section data-mw-section-id="0"><div class="navbox">Stubs</div></section>')),
    ]


_WORDS = ("river city empire council treaty battle station railway museum island mountain village school "
          "church bridge festival album river song league season election governor province century century "
          "population district harbour castle dynasty kingdom novel film director painter composer").split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + f" in {rng.randint(1200, 2025)}."


def generated_pages(n: int, *, seed: int = 11, first_id: int = 1) -> list[WikiPage]:
    """``n`` generated pages: mostly articles (lead, two or three sections of one or two paragraphs
    with references and links, every fifth with an infobox, every seventh with a wikitable), plus a
    redirect every 25th page and a Talk page every 40th. About five blocks an article."""
    return list(iter_generated_pages(n, seed=seed, first_id=first_id))


def iter_generated_pages(n: int, *, seed: int = 11, first_id: int = 1) -> Iterator[WikiPage]:
    """:func:`generated_pages` one at a time (for dumps larger than memory should hold)."""
    rng = random.Random(seed)
    for number in range(n):
        page_id = first_id + number
        title = f"Generated article {page_id}"
        if number % 25 == 24:
            yield WikiPage(page_id, 10_000 + page_id, f"Redirect {page_id}", f"#REDIRECT [[{title}]]", "",
                           redirect=title)
            continue
        if number % 40 == 39:
            yield WikiPage(page_id, 10_000 + page_id, f"Talk:{title}", "Discussion.", article_html("Talk", "<p>Discussion.</p>"),
                           namespace=1)
            continue
        wiki, html = [], []
        if number % 5 == 0:
            wiki.append(f"{{{{Infobox settlement\n| name = {title}\n| population = {rng.randint(100, 99999)}\n"
                        f"| founded = {rng.randint(800, 1900)}\n}}}}")
            html.append(f'<table class="infobox"><tbody><tr><th>Name</th><td>{title}</td></tr></tbody></table>')
        lead = " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
        wiki.append(f"'''{title}''' is a [[{rng.choice(_WORDS)}]]. {lead}<ref>Source {number}.</ref>")
        html.append(f"<p><b>{title}</b> is a {lead}{_REF}</p>")
        for section in range(rng.randint(2, 3)):
            name = f"{rng.choice(_WORDS).capitalize()} {section + 1}"
            wiki.append(f"== {name} ==")
            html.append(f'<h2 id="{name.replace(" ", "_")}">{name}</h2>')
            for _ in range(rng.randint(1, 2)):
                text = " ".join(_sentence(rng) for _ in range(rng.randint(3, 7)))
                wiki.append(text + "<ref>Book.</ref>\n")
                html.append(f"<p>{text}{_REF}</p>")
        if number % 7 == 0:
            rows = [(rng.randint(1900, 2025), rng.choice(_WORDS), rng.randint(1, 999)) for _ in range(4)]
            wiki.append("== Statistics ==\n{| class=\"wikitable\"\n! Year !! Item !! Count\n"
                        + "".join(f"|-\n| {y} || {w} || {c}\n" for y, w, c in rows) + "|}")
            html.append('<h2 id="Statistics">Statistics</h2><table class="wikitable"><tbody><tr><th>Year</th><th>Item</th><th>Count</th></tr>'
                        + "".join(f"<tr><td>{y}</td><td>{w}</td><td>{c}</td></tr>" for y, w, c in rows) + "</tbody></table>")
        yield WikiPage(page_id, 10_000 + page_id, title, "\n\n".join(wiki), article_html(title, "".join(html)))
