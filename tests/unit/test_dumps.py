"""Dump readers and converters, checked block by block on small dumps written here in every
published format, and their errors on broken files."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from claire.errors import DatasetError
from claire.ingestion.dumps.convert import convert_pages
from claire.ingestion.dumps.readers import DumpReader
from claire.testing.dumps import generated_pages, sample_pages, write_html_dump, write_xml_dump

MARIE_LEAD = (
    "Marie Skłodowska-Curie (7 November 1867 – 4 July 1934) was a Polish and naturalised-French physicist and "
    "chemist. She was the first woman to win a Nobel Prize.\nShe won prizes in two sciences."
)
NOBEL_TABLE = (
    "Table: Nobel Prizes\n| Year | Prize | Shared with |\n| --- | --- | --- |\n"
    "| 1903 | Physics | Pierre Curie, Henri Becquerel |\n| 1911 | Chemistry | — |"
)
URL = "https://en.wikipedia.org/wiki/"


def convert(path: Path):
    return {r.title: r for r in convert_pages(list(DumpReader(path)))}


def check_common(results, infobox: str, zurich_url: str) -> None:
    assert {t: r.skipped for t, r in results.items() if r.skipped} | {"Curie": "redirect"} == {
        "Curie": "redirect", "Mercury": "disambiguation", "Talk:Marie Curie": "namespace", "Stub page": "empty"}
    marie = results["Marie Curie"].blocks
    got = [(b.id, b.block_type, b.section_title, b.content, b.url) for b in marie]
    assert got == [
        ("101-0", "infobox", "", infobox, URL + "Marie_Curie"),
        ("101-1", "text", "", MARIE_LEAD, URL + "Marie_Curie"),
        ("101-2", "text", "Life > Early years", "She was born in Warsaw on 7 November 1867.", URL + "Marie_Curie#Early_years"),
        ("101-3", "text", "Life > Paris", "In 1891 she moved to Paris, where she studied at the University of Paris.",
         URL + "Marie_Curie#Paris"),
        ("101-4", "table", "Awards", NOBEL_TABLE, URL + "Marie_Curie#Awards"),
    ]
    assert all((b.page_id, b.revision_id, b.document_title) == (101, 5001, "Marie Curie") for b in marie)
    zurich = results["Zürich"].blocks
    assert [(b.section_title, b.content) for b in zurich] == [
        ("", "Zürich is the largest city in Switzerland."),
        ("Geography", "Zürich lies at the north-western end of Lake Zurich."),
        ("Geography > Climate", "The city has an oceanic climate with about 1134 mm of rain a year."),
    ]
    assert zurich[2].url == zurich_url
    text = "\n".join(b.content for r in results.values() for b in r.blocks)
    for leak in ("<ref", "ref>", "{{", "}}", "[[", "]]", "<!--", "editors", "Quinn", "[1]", "citation needed", "thumb",
                 "Category", "Reflist", "''", "edit]", "Skłodowska-Curie]]", "Polish-French physicist"):
        assert leak not in text, leak


@pytest.mark.parametrize("name", ["pages.xml", "pages.xml.bz2"])
def test_mediawiki_xml_dump_block_by_block(tmp_path, name):
    results = convert(write_xml_dump(tmp_path / name, sample_pages()))
    infobox = ("Name: Marie Curie\nBirth date: 1867-11-07\nBirth place: Warsaw, Congress Poland\n"
               "Field: Physics, Chemistry\nSpouse: Pierre Curie (m. 1895)")
    check_common(results, infobox, URL + "Z%C3%BCrich#Climate")
    assert results["Curie"].skipped == "redirect"


@pytest.mark.parametrize("name", ["pages.ndjson", "pages.json.gz", "pages.tar.gz"])
def test_enterprise_html_dump_block_by_block(tmp_path, name):
    results = convert(write_html_dump(tmp_path / name, sample_pages()))
    infobox = "Born: 1867-11-07 Warsaw, Congress Poland\nField: Physics, Chemistry\nSpouse: Pierre Curie (m. 1895)"
    check_common(results, infobox, URL + "Zürich#Climate")
    assert "Curie" not in results  # Enterprise dumps hold no redirect pages


def test_long_tables_are_split_with_the_header_repeated(tmp_path):
    rows = "".join(f"|-\n| {year} || item {year} with several words in the cell || {year * 3}\n" for year in range(1900, 1960))
    wikitext = "Intro.\n== Data ==\n{| class=\"wikitable\"\n! Year !! Item !! Value\n" + rows + "|}"
    from claire.testing.dumps import WikiPage

    path = write_xml_dump(tmp_path / "t.xml", [WikiPage(7, 70, "Table page", wikitext, "")])
    tables = [b for b in convert(path)["Table page"].blocks if b.block_type == "table"]
    assert len(tables) > 1
    for block in tables:
        lines = block.content.splitlines()
        assert lines[:2] == ["| Year | Item | Value |", "| --- | --- | --- |"]
        assert all(len(line.split(" | ")) == 3 for line in lines)
    cells = [line for b in tables for line in b.content.splitlines()[2:]]
    assert len(cells) == 60 and cells[0] == "| 1900 | item 1900 with several words in the cell | 5700 |"


def test_truncated_bz2_names_file_and_position(tmp_path):
    data = bz2.compress(write_xml_dump(tmp_path / "full.xml", generated_pages(300)).read_bytes())
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError) as caught:
        list(DumpReader(cut))
    message = str(caught.value)
    assert str(cut) in message and "byte" in message and "truncated" in message and "\n" not in message


def test_malformed_xml_names_line_and_column(tmp_path):
    path = write_xml_dump(tmp_path / "bad.xml", sample_pages())
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if "<title>Zürich</title>" in line)
    lines[number] = lines[number].replace("</title>", "</titel>")
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"bad\.xml: malformed XML at line {number + 1}, column \d+"):
        list(DumpReader(path))


def test_bad_ndjson_line_names_file_and_line(tmp_path):
    path = write_html_dump(tmp_path / "bad.ndjson", sample_pages())
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:50]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.ndjson:3: invalid JSON .*after page 2 \('Zürich'\)"):
        list(DumpReader(path))
    lines[2] = json.dumps({"name": "No id", "version": {"identifier": 1}})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.ndjson:3: field 'identifier' is missing"):
        list(DumpReader(path))


def test_truncated_gzip_and_unknown_formats(tmp_path):
    path = write_html_dump(tmp_path / "dump.json.gz", generated_pages(300))
    path.write_bytes(path.read_bytes()[:-2000])
    with pytest.raises(DatasetError, match=r"dump\.json\.gz: the compressed stream is cut off .* after page \d+"):
        list(DumpReader(path))
    (tmp_path / "dump.csv").write_text("x")
    with pytest.raises(DatasetError, match="not a dump format"):
        DumpReader(tmp_path / "dump.csv")
    with pytest.raises(DatasetError, match="not found"):
        DumpReader(tmp_path / "missing.xml")


SPAN_TABLE = (
    "| Season | Season | Champion |\n| --- | --- | --- |\n"
    "| 1950 | spring | Ferrari |\n| 1950 | autumn | Alfa Romeo |\n| 1951 | all year | Ferrari |"
)


@pytest.mark.parametrize("fmt", ["xml", "ndjson"])
def test_spanning_cells_are_repeated_so_every_row_reads_whole(tmp_path, fmt):
    from claire.testing.dumps import WikiPage, article_html

    wikitext = ('Intro.\n== Results ==\n{| class="wikitable"\n! colspan="2" | Season !! Champion\n'
                '|-\n| rowspan="2" | 1950 || spring || Ferrari\n|-\n| autumn || Alfa Romeo\n'
                '|-\n| 1951 || all year || rowspan="9" | Ferrari\n|}')
    html = article_html("Spans", '<section data-mw-section-id="0"><p>Intro.</p></section><section data-mw-section-id="1">'
                 '<h2 id="Results">Results</h2><table class="wikitable"><tbody>'
                 '<tr><th colspan="2">Season</th><th>Champion</th></tr>'
                 '<tr><td rowspan="2">1950</td><td>spring</td><td>Ferrari</td></tr><tr><td>autumn</td><td>Alfa Romeo</td></tr>'
                 '<tr><td>1951</td><td>all year</td><td rowspan="9">Ferrari</td></tr></tbody></table></section>')
    page = WikiPage(8, 80, "Spans", wikitext, html)
    path = (write_xml_dump(tmp_path / "s.xml", [page]) if fmt == "xml" else write_html_dump(tmp_path / "s.ndjson", [page]))
    [table] = [b for b in convert(path)["Spans"].blocks if b.block_type == "table"]
    assert table.content == SPAN_TABLE  # a rowspan past the last row ends with the table


def test_cells_lay_out_as_html_lays_them_out():
    from claire.ingestion.dumps.pages import MAX_SPAN, Cell, lay_out, span

    grid = lay_out([[Cell("a", rows=3), Cell("b", cols=2)], [Cell("c"), Cell("d", rows=2)], [Cell("e")], [Cell("f")]])
    assert [[c.text for c in row] for row in grid] == [["a", "b", "b"], ["a", "c", "d"], ["a", "e", "d"], ["f"]]
    assert [span(v) for v in ('"2"', "0", "-3", "wide", 10**9, 1)] == [2, 1, 1, 1, MAX_SPAN, 1]
