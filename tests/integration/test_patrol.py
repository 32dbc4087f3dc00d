"""The patrol of live edits over real parts: a local server-sent-event stream of recorded-format
``recentchange`` events, a local MediaWiki Action API serving revisions, the mock OpenAI server,
and a real index built from a dump (which the patrol keeps current)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claire.config import load_config
from claire.ingestion.dump_build import IngestOptions, build_from_dump
from claire.indexes.retriever import open_retriever
from claire.testing.doubles import kind_of
from claire.testing.dumps import WikiPage, write_xml_dump
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.wiki_doubles import EventStreamServer, WikiApiServer, change_event
from claire.workflows.patrol import run_patrol
from claire.web.settings import ServeSettings
from claire.workflows.job_store import JobStore
from claire.web.views import patrol_item

TOWER = ("'''Eiffel Tower''' is a wrought-iron lattice tower in Paris. The Eiffel Tower was completed in March 1889 "
         "for the World's Fair. It was designed by the company of Gustave Eiffel.")
PARIS_OLD = "'''Paris''' is the capital of France. The city is home to the Eiffel Tower, a landmark on the Champ de Mars."
PARIS_NEW = PARIS_OLD + " The Eiffel Tower was completed in 1890 for a world exhibition."
LOUVRE = "'''Louvre''' is a museum in Paris. It opened in 1793 in a former royal palace."
LOUVRE_NEW = LOUVRE + " The museum holds the painting known as the Mona Lisa since the nineteenth century."

REVISIONS = {
    11: (1, "Eiffel Tower", TOWER),
    21: (2, "Paris", PARIS_OLD), 22: (2, "Paris", PARIS_NEW),
    31: (3, "Louvre", LOUVRE), 32: (3, "Louvre", LOUVRE_NEW),
    41: (4, "Gone page", "Text."), 42: (4, "Gone page", "Text, changed."),
    51: (5, "Notre-Dame", "'''Notre-Dame''' is a cathedral in Paris. Its construction began in 1163 under a bishop."),
}


def events() -> list:
    """A recording with everything a live stream holds: kept edits, a repeat, a bot, another wiki,
    a talk page, a malformed event, a deleted page, a revision the API no longer has, a creation."""
    return [
        change_event("Paris", 21, 22),
        change_event("Paris", 21, 22),  # delivered twice
        change_event("Louvre", 31, 32, bot=True),
        change_event("Louvre", 31, 32, wiki="frwiki", server_url="https://fr.wikipedia.org"),
        change_event("Talk:Paris", 61, 62, namespace=1),
        "{this is not json",
        change_event("Gone page", 41, 42),
        change_event("Louvre", 31, 99),  # revision 99 is not served
        change_event("Notre-Dame", None, 51, type="new"),
        change_event("Louvre", 31, 32),
    ]


def model(body: dict) -> dict:
    """The patrol's model: every sentence of an extraction request is a fact; the verifier flags
    the planted 1890 (1889 in the index)."""
    kind = kind_of(body)
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    if kind == "extract":
        text = user.split("<passage>", 1)[-1].split("</passage>", 1)[0] if "<passage>" in user else user
        sentences = [s.strip() for s in text.replace("\n", " ").split(". ") if len(s.split()) >= 4]
        return {"content": "\n".join(f"<fact>{s.rstrip('.')}.</fact>" for s in sentences)}
    if kind == "verifier":
        fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
        score = 0.9 if "1890" in fact else 0.1
        return {"content": f"<analysis>[1] says 1889.</analysis><inconsistency_score>{score}</inconsistency_score>"}
    return {"content": "ok"}


@pytest.fixture
def wiki_index(tmp_path):
    """An index of three articles built from a dump (it has a ledger, so edits can be stored)."""
    pages = [WikiPage(1, 11, "Eiffel Tower", TOWER, ""), WikiPage(2, 21, "Paris", PARIS_OLD, ""),
             WikiPage(3, 31, "Louvre", LOUVRE, "")]
    dump = write_xml_dump(tmp_path / "wiki.xml", pages)
    build_from_dump(dump, name="live", root=tmp_path / "idx", options=IngestOptions(workers=0, show_progress=False, device="cpu"))
    return tmp_path / "idx"


def config_for(llm: MockOpenAIServer, root: Path, **watch: object):
    return load_config(None, {
        "llm.base_url": llm.base_url, "llm.api_key": "sk-patrol", "llm.cache": False, "llm.max_attempts": 2,
        "llm.retry_base_wait": 0.0, "agent.system": "rav", "retrieval.rerank": False, "retrieval.index": "live",
        "retrieval.path": str(root), "retrieval.query_runtime": "torch", "watch.index_every": 0,
        **{f"watch.{key}": value for key, value in watch.items()}}, environ={})


async def test_the_patrol_checks_each_kept_edit_once_and_keeps_the_index_current(tmp_path, wiki_index):
    with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS, deleted={"Gone page"}, maxlag_once=True) as api, \
            EventStreamServer(events(), drop_after=3) as stream:
        config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, user_agent="CLAIRE test (patrol@example.org)")
        settings = ServeSettings(data_dir=tmp_path / "web", concurrency=2)
        stats = await run_patrol(config, store_path=settings.store_path(), concurrency=settings.concurrency,
                                 max_events=len(events()))
    # the dropped connection was resumed after the last event seen, not from the start
    assert stream.connections[0] is None and stream.connections[1] == "2"
    assert stats.seen == 10 and stats.kept == 5 and stats.repeated == 1 and stats.left_aside == 3 and stats.bad == 1
    assert stats.skipped == 2 and stats.checked == 3 and stats.failed == 0
    store = JobStore(settings.store_path())
    try:
        flagged = [patrol_item(r) for r in store.patrol_items()]
        assert [(item["title"], item["revision"]) for item in flagged] == [("Paris", 22)]
        paris = patrol_item(store.patrol_items(flagged_only=True)[0])
        assert "1890" in paris["fact"] and paris["verdict"] == "inconsistent"
        assert paris["diff_url"] == "https://en.wikipedia.org/w/index.php?diff=22&oldid=21"
        every = [patrol_item(r) for r in store.patrol_items(flagged_only=False)]
        assert {item["title"] for item in every} == {"Paris", "Louvre", "Notre-Dame"}  # no bot, frwiki, talk page
        louvre = [item for item in every if item["title"] == "Louvre"]
        assert [item["fact"] for item in louvre] == ["The museum holds the painting known as the Mona Lisa since the nineteenth century."]
        jobs = {job: store.job(job) for job in ("enwiki:42", "enwiki:99")}
        assert jobs["enwiki:42"]["status"] == "skipped" and "no longer exists" in jobs["enwiki:42"]["error"]
        assert jobs["enwiki:99"]["status"] == "skipped" and "no longer available" in jobs["enwiki:99"]["error"]
    finally:
        store.close()
    # the facts were checked with the edited article left out of the search
    paris_checks = [r["messages"][-1]["content"] for r in llm.requests
                    if kind_of(r) == "verifier" and "1890" in r["messages"][-1]["content"]]
    assert paris_checks and all('title="Paris"' not in text and 'title="Eiffel Tower"' in text for text in paris_checks)
    # polite to Wikimedia: a User-Agent with a contact, maxlag on every request, the lag waited out
    assert all(r["user_agent"].startswith("CLAIRE test") and r["maxlag"] == "5" for r in api.requests)
    # the index now holds the edited revisions: the new Louvre sentence is found
    with open_retriever("live", root=wiki_index, query_runtime="torch") as retriever:
        hits = retriever.search("Mona Lisa painting in the museum", k=3, mode="dense")
    assert any("Mona Lisa" in hit.block.content for hit in hits) and stats.indexed == 3


def _watch(tmp_path: Path, llm: MockOpenAIServer, api: WikiApiServer, recording: Path, root: Path, *more: str):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OPENAI_API_KEY": "sk-patrol",
           "CLAIRE_DATA_DIR": str(tmp_path / "data"), "CLAIRE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-c", "from claire.cli import main; main()", "watch", "--replay", str(recording),
               "--api-url", api.api_url, "--base-url", llm.base_url, "--data-dir", str(tmp_path / "web"),
               "--index", "live", "--system", "rav", "--no-cache", "--set", "retrieval.rerank=false",
               "--set", f"retrieval.path='{root}'", "--set", "retrieval.query_runtime='torch'",
               "--set", "watch.index_every=0", *more]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_killed_watch_resumes_with_no_edit_lost_or_checked_twice(tmp_path, wiki_index):
    # twelve edits of one page, each adding one sentence; the model answers slowly enough to be killed mid-way
    revisions = {100: (3, "Louvre", LOUVRE)}
    recording = []
    text = LOUVRE
    for number in range(1, 13):
        text += f" In the year {1900 + number} the museum received gift number {number} from a donor."
        revisions[100 + number] = (3, "Louvre", text)
        recording.append(json.dumps(change_event("Louvre", 100 + number - 1, 100 + number)))
    path = tmp_path / "recentchange.jsonl"
    path.write_text("\n".join(recording) + "\n", encoding="utf-8")
    with MockOpenAIServer(model, latency=0.3) as llm, WikiApiServer(revisions) as api:
        process = _watch(tmp_path, llm, api, path, wiki_index, "--edits-in-flight", "1")
        store_path = tmp_path / "web" / "jobs.sqlite"
        deadline = time.monotonic() + 240
        done = 0
        while time.monotonic() < deadline and process.poll() is None and done < 3:
            if store_path.exists():
                try:
                    with sqlite3.connect(store_path) as db:
                        done = db.execute("SELECT COUNT(*) FROM jobs WHERE kind = 'patrol' AND status = 'done'").fetchone()[0]
                except sqlite3.OperationalError:
                    done = 0
            time.sleep(0.1)
        assert process.poll() is None and done >= 3, "the watch finished or stalled before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
        finished = _watch(tmp_path, llm, api, path, wiki_index, "--edits-in-flight", "4")
        out, errors = finished.communicate(timeout=300)
        assert finished.returncode == 0, errors
    store = JobStore(store_path)
    try:
        jobs = store.patrol_counts()
        assert jobs == {"done": 12}  # every edit, once
        facts = [patrol_item(r) for r in store.patrol_items(flagged_only=False, limit=100)]
        assert len(facts) == 12 and len({item["revision"] for item in facts}) == 12
        assert all(f"gift number {item['revision'] - 100} " in item["fact"] + " " for item in facts)
    finally:
        store.close()
    # one extraction per edit; only the edit in flight at the kill may have been extracted twice
    assert 12 <= sum(kind_of(r) == "extract" for r in llm.requests) <= 13
