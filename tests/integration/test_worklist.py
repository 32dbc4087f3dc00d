"""The corpus run end to end on a real on-disk demo index, with the oracle behind a real
OpenAI-compatible server: every planted pair of the demo corpus's key listed once with the right
side and nothing else, the wikitext worklist parsed back as a table, and a second run that repeats
no LLM call and lists nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

from urllib.parse import parse_qs, urlsplit

import mwparserfromhell
import pytest

from claire.testing.cli import run_claire
from claire.testing.http_server import BackgroundServer, QuietHandler
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.oracle import KEY, oracle_responder

ARTICLES = ["Paris", "The Beatles", "Neil Armstrong", "Nobel Prize in Physics", "Edwin Hubble", "John Williams",
            "Amazon River", "Not An Article Here"]


@pytest.fixture
def oracle():
    with MockOpenAIServer(oracle_responder(), model="oracle") as server:
        yield server


def test_the_corpus_run_killed_and_resumed_lists_each_planted_pair_once_with_the_right_side(oracle, tmp_path,
                                                                                            copy_demo_index):
    """A run killed with ``kill -9`` in the middle of its checks, then started again: it resumes (no
    fact checked into the run twice), lists each planted pair once with the right side and nothing
    else, and a third run repeats no LLM call."""
    import os
    import signal
    import subprocess
    import sys
    import time

    copy_demo_index(tmp_path / "indexes")
    titles = tmp_path / "titles.txt"
    titles.write_text("\n".join(["# the articles that hold the planted errors", *ARTICLES]) + "\n")
    out = tmp_path / "wl"
    args = ("worklist", "--titles", str(titles), "--out", str(out), "--key", str(KEY), "--concurrency", "16",
            "--base-url", oracle.base_url, "--model", "oracle")
    env = {**os.environ, "CLAIRE_CACHE_DIR": str(tmp_path), "CLAIRE_DATA_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test"}
    killed = subprocess.Popen([sys.executable, "-m", "claire.cli", *args], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    checks = out / "checks" / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while killed.poll() is None and time.monotonic() < deadline:
        if checks.exists() and checks.read_text().count("\n") >= 5:
            os.kill(killed.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    done = checks.read_text().count("\n")
    result = run_claire(*args, cache=tmp_path)
    assert result.returncode == 1, result.stderr  # contradictions listed
    assert "estimate" in result.stdout and "Not An Article Here" in result.stderr  # said before the start
    ids = [json.loads(line)["claim_id"] for line in checks.read_text().splitlines()]
    assert len(ids) == len(set(ids)) and len(ids) > done  # resumed: the rest checked, nothing checked twice
    metrics = json.loads((out / "worklist_metrics.json").read_text())
    assert (metrics["found"], metrics["not_planted"], metrics["duplicates"], metrics["right_side"]) == (7, 0, 0, 7)
    entries = [json.loads(line) for line in (out / "worklist.jsonl").read_text().splitlines()]
    assert len(entries) == 7
    eiffel = next(e for e in entries if e["should_change"] == "Paris")
    assert len(eiffel["facts"]) >= 2  # several facts of one planted error: one entry, one decision
    for entry in entries:
        assert entry["decision"] == "passage" and entry["values_from"] == "model"
        assert {side["side"] for side in entry["sides"]} == {"fact", "passage"}
        assert all(side["document_title"] for side in entry["sides"])
    table = mwparserfromhell.parse((out / "worklist.wiki").read_text())
    assert len(table.filter_tags(matches=lambda node: node.tag == "table")) == 1
    rows = [tag for tag in table.filter_tags(recursive=True) if tag.tag == "tr"]
    assert len(rows) == 7  # one row an entry, under the header
    assert all(len([c for c in row.contents.filter_tags(recursive=False) if c.tag == "td"]) == 8 for row in rows)
    assert not table.filter_templates()  # nothing in it acts as a template
    assert all(str(link.title).startswith(":") for link in table.filter_wikilinks())

    calls = oracle.calls
    again = run_claire(*args, cache=tmp_path)  # a rerun: every answer from the cache, nothing listed twice
    assert again.returncode == 1, again.stderr
    assert oracle.calls == calls
    assert [json.loads(line)["id"] for line in (out / "worklist.jsonl").read_text().splitlines()] == \
        [entry["id"] for entry in entries]


def test_a_worklist_without_articles_or_with_a_bad_key_is_one_line(tmp_path):
    result = run_claire("worklist", "--out", str(tmp_path / "wl"), cache=tmp_path)
    assert result.returncode == 2 and "--titles FILE, --category NAME" in result.stderr and "Traceback" not in result.stderr
    key = tmp_path / "key.jsonl"
    key.write_text('{"id": "p", "wrong_block": "a"}\n')
    result = run_claire("worklist", "--all", "--key", str(key), "--out", str(tmp_path / "wl"), cache=tmp_path)
    assert result.returncode == 2 and f"{key}:1: field contradicting_blocks" in result.stderr
    result = run_claire("eval", "--task", "worklist", "--dataset", str(key), "--out", str(tmp_path / "wl"), cache=tmp_path)
    assert result.returncode == 2 and f"{key}:1: field contradicting_blocks" in result.stderr  # the same run, from eval


def test_the_worklist_tab_reads_filters_decides_and_exports(tmp_path, copy_demo_index):
    import httpx

    from claire.agent.runtime import open_retrieval
    from claire.config import load_config
    from claire.jobs.worklist import write_worklist
    from claire.resolving.worklist import EntryFact, WorklistEntry
    from claire.tasks.sides.records import SideReport
    from claire.web.app import create_app
    from claire.web.serve import ServerThread
    from claire.web.settings import ServeSettings

    run = tmp_path / "wl"
    run.mkdir()
    entries = [WorklistEntry(claim_id=f"f{n}", id=f"c-{n}", decision=decision, confidence=0.7, should_change=wrong if decision == "passage" else None,
                             sides=[SideReport(side="fact", text="x", document_title=wrong, block_id=f"a{n}"),
                                    SideReport(side="passage", text="y", document_title=right, block_id=f"b{n}")],
                             facts=[EntryFact(claim_id=f"f{n}", text="x")])
               for n, (wrong, right, decision) in enumerate([("Paris", "Eiffel Tower", "passage"),
                                                             ("Edwin Hubble", "Hubble Space Telescope", "unknown")])]
    write_worklist(run, entries)
    root = copy_demo_index(tmp_path / "indexes")
    config = load_config(None, {"llm.api_key": "sk-test", "retrieval.path": str(root)})
    retriever = open_retrieval(config)
    try:
        settings = ServeSettings(data_dir=tmp_path / "web", worklist=run)
        with ServerThread(create_app(config, settings, retriever=retriever)) as server, \
                httpx.Client(base_url=server.url, timeout=30) as client:
            data = client.get("/api/worklist").json()
            assert (data["total"], data["open"], [e["id"] for e in data["entries"]]) == (2, 2, ["c-0", "c-1"])
            assert [e["id"] for e in client.get("/api/worklist?article=hubble").json()["entries"]] == ["c-1"]
            assert [e["id"] for e in client.get("/api/worklist?decision=passage").json()["entries"]] == ["c-0"]
            decided = client.post("/api/worklist/c-0", json={"status": "accepted", "note": "fixed Paris"})
            assert decided.status_code == 200 and decided.json()["status"] == "accepted"
            assert client.post("/api/worklist/nope", json={"status": "accepted"}).status_code == 404
            assert client.post("/api/worklist/c-0", json={"status": "maybe"}).status_code == 422
            assert [e["id"] for e in client.get("/api/worklist?status=open").json()["entries"]] == ["c-1"]
            exported = client.get("/api/worklist/export?format=wiki").text
            assert "Edwin Hubble" in exported and "Paris" not in exported  # the decided entry is off the open list
    finally:
        retriever.close()
    kept = [json.loads(line) for line in (run / "worklist.jsonl").read_text().splitlines()]
    assert kept[0]["status"] == "accepted" and kept[0]["note"] == "fixed Paris"
    write_worklist(run, entries)  # a rerun of the corpus keeps the editor's decision
    assert json.loads((run / "worklist.jsonl").read_text().splitlines()[0])["status"] == "accepted"


def test_claire_resolve_names_the_passage_side_on_the_five_planted_claims(oracle, tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    records = json.loads((Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json").read_text())
    planted = [r["claim"] for r in records if r["claim"]["claim_id"] in {f"demo_{n}" for n in range(1, 6)}]
    assert len(planted) == 5
    for claim in planted:
        block = claim["claim_context_block"]
        result = run_claire("resolve", claim["claim_text"], "--title", block["document_title"], "--section",
                            block["section_title"], "--context", block["content"], "--json",
                            "--base-url", oracle.base_url, "--model", "oracle", cache=tmp_path)
        assert result.returncode == 1, (claim["claim_id"], result.stderr)  # a contradiction, resolved
        card = json.loads(result.stdout)
        assert card["decision"] == "passage" and card["values_from"] == "model", (claim["claim_id"], card["reasons"])
        fact, passage = card["sides"]
        assert passage["verified"] and passage["document_title"] != block["document_title"]


class WikiLists(QuietHandler):
    """A wiki's Action API and PagePile, answering as they do (recorded shapes): a category in two
    pages (a continuation), a WikiProject's talk pages, a PagePile."""

    asked: list[dict[str, list[str]]] = []

    def do_GET(self):  # noqa: N802
        query = parse_qs(urlsplit(self.path).query)
        WikiLists.asked.append(query)
        if self.path.startswith("/pagepile"):
            return self.send_body(200, {"id": 4242, "wiki": "enwiki",
                                        "pages": ["Neil_Armstrong", "Talk:Paris", "Mission:_Impossible"]})
        title = query["cmtitle"][0]
        if title == "Category:Landmarks in Paris" and "cmcontinue" not in query:
            return self.send_body(200, {"continue": {"cmcontinue": "page|2", "continue": "-||"},
                                        "query": {"categorymembers": [{"ns": 0, "title": "Paris"}]}})
        if title == "Category:Landmarks in Paris":
            return self.send_body(200, {"query": {"categorymembers": [{"ns": 0, "title": "Eiffel Tower"}]}})
        if title == "Category:WikiProject Spaceflight articles":
            return self.send_body(200, {"query": {"categorymembers": [{"ns": 1, "title": "Talk:Apollo 11"}]}})
        return self.send_body(200, {"error": {"code": "invalidcategory", "info": "not a category"}})


async def test_articles_come_from_a_category_a_wikiproject_and_a_pagepile():
    from claire.jobs.worklist import listed_titles

    with BackgroundServer(WikiLists) as wiki:
        base = f"http://127.0.0.1:{wiki.port}"
        titles = await listed_titles(category="Landmarks in Paris", wikiproject="Spaceflight", pagepile=4242,
                                     api_url=f"{base}/w/api.php", pagepile_url=f"{base}/pagepile/api.php")
    assert titles == ["Paris", "Eiffel Tower", "Apollo 11", "Neil Armstrong", "Mission: Impossible"]
    assert all(q.get("maxlag") == ["5"] for q in WikiLists.asked)


def test_a_worklist_of_a_category_runs_on_the_articles_the_index_holds(oracle, tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    with BackgroundServer(WikiLists) as wiki:
        result = run_claire("worklist", "--category", "Landmarks in Paris", "--api-url", f"http://127.0.0.1:{wiki.port}/w/api.php",
                            "--max-facts", "3", "--out", str(tmp_path / "wl"), "--concurrency", "8",
                            "--base-url", oracle.base_url, "--model", "oracle", cache=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert "2 article(s)" in result.stdout
