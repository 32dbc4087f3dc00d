"""Other editions as corpora, end to end: a German dump (its infobox and citation templates, its
section names) and the English sample dump exported with their langlinks tables, built into one
real index with the offline multilingual embedder, and searched across editions; the Action API's
``prop=langlinks`` answered by a local server with recorded answers."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from claire.indexes.retriever import open_retriever
from claire.ingestion.dump_build import export_corpus
from claire.ingestion.langlinks import read_langlinks
from claire.testing.cli import run_claire
from claire.testing.http_server import BackgroundServer, QuietHandler

DATA = Path(__file__).resolve().parents[2] / "indexes" / "data"


def _blocks(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_german_dump_exports_with_its_language_templates_and_links(tmp_path):
    out = tmp_path / "de.jsonl"
    done = run_claire("index", "export", str(DATA / "sample_dump_de.xml"), "--out", str(out),
                      "--langlinks", str(DATA / "sample_langlinks_de.sql"), "--link-languages", "en,fr", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 pages read" in done.stdout
    blocks = _blocks(out)
    assert {b["language"] for b in blocks} == {"de"} and all(b["id"].startswith("de-") for b in blocks)
    assert blocks[0]["counterparts"] == {"en": "Marie Curie", "fr": "Marie Curie"}  # pl left out
    infobox = next(b for b in blocks if b["block_type"] == "infobox")
    assert "Geburtsdatum: 7. November 1867" in infobox["content"] and "Bild" not in infobox["content"]
    assert not any(b["section_title"] == "Einzelnachweise" for b in blocks)  # the edition's apparatus section
    lead = next(b for b in blocks if b["document_title"] == "Marie Curie" and b["block_type"] == "text")
    web = lead["citations"][0]
    assert (web["site"], web["date"], web["kind"]) == ("nobelprize.org", "2020-03-12", "web")  # {{Internetquelle}}
    youth = next(b for b in blocks if b["section_title"] == "Leben > Jugend in Warschau")
    assert youth["citations"][0]["title"] == "Marie Curie. Eine Biographie"  # {{Literatur}}


def test_the_langlinks_table_dump_is_read_with_its_escapes():
    links = read_langlinks(DATA / "sample_langlinks_de.sql")
    assert links[2001]["pl"] == "Maria Skłodowska-Curie" and links[2003] == {"en": "O'Brien"}
    assert read_langlinks(DATA / "sample_langlinks_de.sql", ["fr"])[2002] == {"fr": "Zurich"}


def test_two_editions_exported_and_built_into_one_index_search_across(tmp_path):
    export_corpus(DATA / "sample_dump.xml", tmp_path / "en.jsonl")  # the English dump names its edition (<dbname>)
    from claire.ingestion.dump_build import IngestOptions

    export_corpus(DATA / "sample_dump_de.xml", tmp_path / "de.jsonl",
                  IngestOptions(langlinks=read_langlinks(DATA / "sample_langlinks_de.sql", ["en"])))
    both = tmp_path / "both.jsonl"
    both.write_text((tmp_path / "en.jsonl").read_text() + (tmp_path / "de.jsonl").read_text(), encoding="utf-8")
    built = run_claire("index", "build", str(both), "--name", "wiki", "--embedder", "e5-small",
                       "--set", f"retrieval.path={tmp_path / 'indexes'}", cache=tmp_path)
    assert built.returncode == 0, built.stderr
    retriever = open_retriever("wiki", root=tmp_path / "indexes")
    try:
        english = retriever.document("Marie Curie")
        assert {b.language for b in english} == {"en", "de"}
        assert all(b.counterparts == {"de": "Marie Curie"} for b in english if b.language == "en")  # linked back
    finally:
        retriever.close()
    found = run_claire("search", "Wo wurde Marie Curie geboren?", "--index", "wiki", "--language", "de",
                       "--languages", "en", "--json", "--set", f"retrieval.path={tmp_path / 'indexes'}", cache=tmp_path)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert any(h.get("language") == "en" for h in hits) and any(h.get("language") == "de" for h in hits)


class LanglinksApi(QuietHandler):
    """A wiki's Action API answering ``prop=langlinks`` as it does (a recorded shape, with a
    continuation)."""

    asked: list[dict[str, list[str]]] = []

    def do_GET(self):  # noqa: N802
        query = parse_qs(urlsplit(self.path).query)
        LanglinksApi.asked.append(query)
        if "llcontinue" not in query:
            return self.send_body(200, {"batchcomplete": False, "continue": {"llcontinue": "2001|fr", "continue": "||"},
                                        "query": {"pages": [
                                            {"pageid": 2001, "ns": 0, "title": "Marie Curie",
                                             "langlinks": [{"lang": "en", "title": "Marie Curie"}]},
                                            {"pageid": 2002, "ns": 0, "title": "Zürich"}]}})
        return self.send_body(200, {"batchcomplete": True, "query": {"pages": [
            {"pageid": 2001, "ns": 0, "title": "Marie Curie", "langlinks": [{"lang": "fr", "title": "Marie Curie"}]},
            {"pageid": 2002, "ns": 0, "title": "Zürich", "langlinks": [{"lang": "en", "title": "Zürich"}]}]}})


def test_counterparts_from_the_action_api(tmp_path):
    out = tmp_path / "de.jsonl"
    with BackgroundServer(LanglinksApi) as wiki:
        done = run_claire("index", "export", str(DATA / "sample_dump_de.xml"), "--out", str(out),
                          "--langlinks-api", f"http://127.0.0.1:{wiki.port}/w/api.php", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    blocks = _blocks(out)
    assert blocks[0]["counterparts"] == {"en": "Marie Curie", "fr": "Marie Curie"}
    assert next(b for b in blocks if b["document_title"] == "Zürich")["counterparts"] == {"en": "Zürich"}
    assert LanglinksApi.asked[0]["prop"] == ["langlinks"] and LanglinksApi.asked[0]["titles"] == ["Marie Curie|Zürich"]


def test_an_index_of_one_other_edition_says_which_edition_to_search(tmp_path):
    indexes = f"retrieval.path={tmp_path / 'indexes'}"
    built = run_claire("index", "build", "--from-dump", str(DATA / "sample_dump_de.xml"), "--name", "dewiki",
                       "--embedder", "e5-small", "--set", indexes, cache=tmp_path)
    assert built.returncode == 0, built.stderr
    plain = run_claire("search", "Geburtsort Warschau", "--index", "dewiki", "--set", indexes, cache=tmp_path)
    assert plain.returncode != 0 and "holds the de edition only" in plain.stderr and "--language de" in plain.stderr
    assert "Traceback" not in plain.stderr
    found = run_claire("search", "Geburtsort Warschau", "--index", "dewiki", "--language", "de", "--json",
                       "--set", indexes, cache=tmp_path)
    assert found.returncode == 0 and json.loads(found.stdout)[0]["language"] == "de"


def test_bad_edition_options_and_an_unreachable_api_end_with_a_message_and_leave_nothing(tmp_path):
    out = tmp_path / "de.jsonl"
    bad = run_claire("index", "export", str(DATA / "sample_dump_de.xml"), "--out", str(out), "--edition", "German!",
                     cache=tmp_path)
    assert bad.returncode == 2 and "--edition: 'german!' is not a language code" in bad.stderr
    assert "Traceback" not in bad.stderr and "internal error" not in bad.stderr
    down = run_claire("index", "export", str(DATA / "sample_dump_de.xml"), "--out", str(out),
                      "--langlinks-api", "http://127.0.0.1:9/w/api.php", "--set", "llm.max_attempts=1", cache=tmp_path)
    assert down.returncode == 2 and "MediaWiki API" in down.stderr
    assert not list(tmp_path.glob("de.jsonl*"))  # no output, and no half-written file beside it
