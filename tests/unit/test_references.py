"""Citations travel with the text: ``<ref>``s of wikitext (cite templates, named and reused refs,
bare URLs, books) become the references of the blocks that cite them; a passage without them
(an old index's payload) reads as having none."""

from __future__ import annotations

from lxml import html

from claire.domain import Block, Reference
from claire.ingestion.dumps.pages import DumpPage
from claire.ingestion.dumps.wikitext import convert
from claire.ingestion.references import iso_date, reference_from_html, reference_from_wikitext, split_marked

PAGE = """'''Halvorsen Bridge''' opened in 1931.<ref name="bbc">{{cite news |url=https://www.bbc.co.uk/news/a |title=Bridge at 90 |work=BBC News |date=31 March 2021}}</ref> It spans the Tarn.<ref>https://example.org/span</ref>
{{Infobox bridge|name=Halvorsen Bridge|opened=1931<ref name="bbc"/>}}
== History ==
Work began in 1928.<ref name="late"/> The engineer was Ruth Allard.<ref>{{cite book |title=Bridges of the North |publisher=Oxford University Press |year=1990}}</ref>

An uncited paragraph about the river.
== References ==
{{reflist|refs=<ref name="late">[https://www.britannica.com/topic/halvorsen Halvorsen Bridge, Britannica]</ref>}}
"""


def blocks_of(text: str) -> list[Block]:
    return convert(DumpPage(page_id=7, revision_id=70, title="Halvorsen Bridge", namespace=0, body=text, kind="wikitext")).blocks


def test_cite_templates_give_url_title_site_date_and_kind():
    ref = reference_from_wikitext("{{Cite journal |title=On bridges |journal=Nature |date=2019-05-02 |url=https://nature.example/x}}")
    assert ref == Reference(url="https://nature.example/x", title="On bridges", site="Nature", date="2019-05-02", kind="journal")
    book = reference_from_wikitext("{{cite book|title=A history|publisher=Local Press|year=1988}}")
    assert book is not None and book.url is None and book.kind == "book" and book.site == "Local Press" and book.date == "1988"
    bare = reference_from_wikitext("See https://example.org/page for more")
    assert bare is not None and bare.url == "https://example.org/page" and bare.kind == "web"
    assert reference_from_wikitext("   ") is None
    assert reference_from_wikitext("Smith 2001, p. 4").kind == "other"


def test_dates_read_as_iso_where_they_can():
    assert iso_date("31 March 2021") == "2021-03-31"
    assert iso_date("March 31, 2021") == "2021-03-31"
    assert iso_date("May 2019") == "2019-05"
    assert iso_date("c. 1850") == "1850"
    assert iso_date("") is None


def test_blocks_carry_the_references_their_sentences_cite():
    blocks = blocks_of(PAGE)
    intro = next(b for b in blocks if b.content.startswith("Halvorsen Bridge opened"))
    assert [r.url for r in intro.citations] == ["https://www.bbc.co.uk/news/a", "https://example.org/span"]
    assert intro.citations[0].site == "BBC News" and intro.citations[0].date == "2021-03-31"
    infobox = next(b for b in blocks if b.block_type == "infobox")
    assert [r.url for r in infobox.citations] == ["https://www.bbc.co.uk/news/a"]  # a named ref reused
    history = next(b for b in blocks if b.section_title == "History")
    urls = [r.url for r in history.citations]
    assert urls[0] == "https://www.britannica.com/topic/halvorsen"  # defined later, in the reference list
    assert history.citations[1].kind == "book" and history.citations[1].url is None
    assert "\ue000" not in "".join(b.content for b in blocks)  # no marker is left in the text
    assert all("References" not in b.section_title for b in blocks)


def test_a_long_paragraph_split_in_two_keeps_each_half_its_own_references():
    first = " ".join(["The first half goes on."] * 30) + "<ref>https://example.org/first</ref>"
    second = " ".join(["The second half goes on."] * 30) + "<ref>https://example.org/second</ref>"
    blocks = blocks_of(f"{first} {second}\n")
    assert len(blocks) >= 2
    assert [r.url for r in blocks[0].citations or []] == ["https://example.org/first"]
    assert [r.url for r in blocks[-1].citations or []] == ["https://example.org/second"]


def test_markers_are_split_from_text():
    text, stretches = split_marked("A.\ue0000\ue001\ue0001\ue001 B.\ue0002\ue001 C.")
    assert text == "A. B. C."
    assert stretches == [("A.", [0, 1]), ("B.", [2])]


def test_an_old_payload_without_citations_reads_as_none():
    block = Block.model_validate({"id": "b", "document_title": "T", "content": "c"})
    assert block.citations is None
    again = Block.model_validate(block.model_dump(exclude_none=True) | {"citations": [{"url": "https://x.example"}]})
    assert again.citations == [Reference(url="https://x.example")]


def test_a_parsoid_reference_list_entry():
    item = html.fromstring('<li id="cite_note-1"><span class="mw-reference-text"><cite class="citation news">'
                           '"Bridge at 90". <i>BBC News</i>. 31 March 2021. <a rel="mw:ExtLink" class="external" '
                           'href="https://www.bbc.co.uk/news/a">link</a></cite></span></li>')
    ref = reference_from_html(item)
    assert ref is not None and ref.url == "https://www.bbc.co.uk/news/a" and ref.kind == "news"
    assert ref.title == "Bridge at 90" and ref.site == "BBC News" and ref.date == "2021-03-31"


def test_wikitext_with_odd_refs_never_breaks_conversion():
    odd = "Text.<ref>{{cite web}}</ref> More.<ref name=\"missing\"/> End.<ref></ref>\n"
    blocks = blocks_of(odd)
    assert blocks and blocks[0].content == "Text. More. End." and blocks[0].citations is None


def test_html_dump_pages_keep_the_references_of_their_reference_list():
    from claire.ingestion.dumps.html import convert as convert_html

    body = ('<html><body><p>The bridge opened in 1931.<sup class="mw-ref reference" typeof="mw:Extension/ref">'
            '<a href="./Halvorsen_Bridge#cite_note-1">[1]</a></sup> It spans the Tarn.</p>'
            '<h2>References</h2><div class="mw-references-wrap"><ol class="mw-references references">'
            '<li about="#cite_note-1" id="cite_note-1"><span class="mw-reference-text"><cite class="citation web">'
            '<a rel="mw:ExtLink" class="external" href="https://example.org/bridge">Bridge facts</a>. '
            '<i>Example Roads</i>. 2020.</cite></span></li></ol></div></body></html>')
    result = convert_html(DumpPage(page_id=1, revision_id=2, title="Halvorsen Bridge", namespace=0, body=body, kind="html"))
    (block,) = result.blocks
    assert block.content == "The bridge opened in 1931. It spans the Tarn."
    assert block.citations == [Reference(url="https://example.org/bridge", title="Bridge facts", site="Example Roads",
                                          date="2020", kind="web")]


def test_a_live_edit_and_a_web_document_carry_their_references():
    from claire.ingestion.web_docs import source_blocks
    from claire.livewiki.edit_diff import page_blocks

    edited = page_blocks(5, 50, "Tern Island", "Tern Island has 214 residents.<ref>{{cite web|url=https://apnews.com/x|"
                                                "title=Island life|website=AP News|date=2024-05-01}}</ref>\n")
    assert [r.url for r in edited.blocks[0].citations] == ["https://apnews.com/x"]
    (block,) = source_blocks("A page about the island.", url="https://example.org/tern", title="Tern")
    assert block.citations == [Reference(url="https://example.org/tern", title="Tern", kind="web")]


def test_adding_a_reference_is_a_look_up_not_a_scan(monkeypatch):
    from claire.domain import Reference
    from claire.ingestion.references import RefBook

    calls = []
    key = Reference.key
    monkeypatch.setattr(Reference, "key", lambda self: calls.append(1) or key(self))
    book = RefBook()
    for number in range(2000):
        book.add(Reference(url=f"https://example.org/{number}", title=f"T{number}"))
    assert book.add(Reference(url="https://example.org/7", title="T7")) == 7
    assert len(book.references) == 2000 and len(calls) <= 2001  # one key a reference (a scan took two million)
