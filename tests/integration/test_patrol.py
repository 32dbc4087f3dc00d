"""The patrol of live edits over real parts: a local server-sent-event stream of recorded-format
``recentchange`` events, a local MediaWiki Action API serving revisions, the mock OpenAI server,
and a real index built from a dump (which the patrol keeps current)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from claire.config import load_config
from claire.ingestion.dump_build import IngestOptions, build_from_dump
from claire.indexes.retriever import open_retriever
from claire.testing.cli import start_claire
from claire.testing.doubles import first_step, kind_of
from claire.testing.dumps import WikiPage, write_xml_dump
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.wiki_doubles import EventStreamServer, WikiApiServer, change_event
from claire.livewiki.patrol import run_patrol
from claire.web.settings import ServeSettings
from claire.jobs.store import JobStore
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
        **{f"watch.{key}": value for key, value in watch.items()}})


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
    return start_claire("watch", "--replay", str(recording), "--api-url", api.api_url, "--base-url", llm.base_url,
                        "--data-dir", str(tmp_path / "web"), "--index", "live", "--system", "rav", "--no-cache",
                        "--set", "retrieval.rerank=false", "--set", f"retrieval.path='{root}'",
                        "--set", "retrieval.query_runtime='torch'", "--set", "watch.index_every=0", *more,
                        cache=tmp_path / "cache", env={"OPENAI_API_KEY": "sk-patrol", "CLAIRE_DATA_DIR": str(tmp_path / "data")})


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


# -- hostile streams, huge edits and failing APIs -------------------------------------

BIG_OLD = "'''Big donation''' is a list of gifts to a museum in Paris."
BIG_NEW = BIG_OLD + " " + " ".join(f"In the year {1000 + number % 900} the museum received gift number {number} from a donor."
                                   for number in range(290_000))  # about 20 MB
ABBEY = "'''Cluny Abbey''' is an abbey in Burgundy."
ABBEY_NEW = ABBEY + " The abbey was founded in 1120 by monks from Cluny\ud800 in the valley."


def _poison(event: dict, old: str, new: str) -> str:
    text = json.dumps(event)
    assert old in text
    return text.replace(old, new)


def hostile_events() -> list:
    """Kept edits with poison events, a 20 MB revision and a lone surrogate between them."""
    return [
        change_event("Paris", 21, 22),
        json.dumps(change_event("Caf\udce9", 1, 2)),  # a lone surrogate in the title
        _poison(change_event("Louvre", 31, 32), '"namespace": 0', '"namespace": 1e999'),
        _poison(change_event("Louvre", 31, 32), '"new": 32', '"new": Infinity'),
        _poison(change_event("Louvre", 31, 32), '"timestamp": ', '"timestamp": ' + "9" * 400 + ", \"x\": "),
        change_event("Louvre", 31, 32),  # sent with a non-ASCII id
        change_event("Big donation", 71, 72),
        change_event("Cluny Abbey", 81, 82),  # its new revision holds half a surrogate pair
        "{this is not json",
        change_event("Notre-Dame", None, 51, type="new"),
    ]


def hostile_revisions() -> dict:
    return {**REVISIONS, 71: (7, "Big donation", BIG_OLD), 72: (7, "Big donation", BIG_NEW),
            81: (8, "Cluny Abbey", ABBEY), 82: (8, "Cluny Abbey", ABBEY_NEW)}


def _wait_for(condition, what: str, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_hostile_stream_never_stops_the_patrol_or_the_web_app_and_a_restart_reruns_nothing(tmp_path, wiki_index):
    import httpx

    from claire.agent.runtime import open_retrieval
    from claire.web.app import create_app
    from claire.web.serve import ServerThread

    events = hostile_events()
    with MockOpenAIServer(model) as llm, WikiApiServer(hostile_revisions()) as api, \
            EventStreamServer(events, ids={5: "posé-5"}, drop_after=6) as stream:
        config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, max_edit_chars=1500,
                            max_facts_per_edit=5)
        settings = ServeSettings(data_dir=tmp_path / "web", concurrency=2, watch=True)
        retriever = open_retrieval(config)
        try:
            with ServerThread(create_app(config, settings, retriever=retriever)) as server, httpx.Client(base_url=server.url) as web:
                patrol = _wait_for(lambda: (lambda p: p if p["edits"].get("done") == 5 and p["stats"]["seen"] >= 11 else None)(
                    web.get("/api/patrol", params={"flagged": "false"}).json()), "the patrol to check every edit")
                # the web app's own scans still work beside it
                scan = web.post("/api/scan", json={"title": "Arc de Triomphe", "text": "The Arc de Triomphe stands in "
                                                    "Paris at the top of the avenue. It was completed in 1836 after thirty years."})
                assert scan.status_code == 202
                finished = _wait_for(lambda: (lambda s: s if s["status"] in ("done", "error") else None)(
                    web.get(f"/api/scan/{scan.json()['id']}").json()), "the scan")
                assert finished["status"] == "done"
                surrogate = web.post("/api/search", content=b'{"query": "tower", "exclude_title": "Caf\\udce9"}',
                                     headers={"content-type": "application/json"})
                assert surrogate.status_code == 422 and "surrogate" in surrogate.text
            stats = patrol["stats"]
            assert stats["bad"] == 5 and stats["repeated"] == 1 and stats["failed"] == 0 and stats["cut"] == 1
            # the non-ASCII id was never sent back: the reconnect went on after the event before it
            assert stream.connections[:2] == [None, "4"]
            items = {item["title"]: item for item in patrol["items"]}
            assert set(items) == {"Paris", "Louvre", "Big donation", "Cluny Abbey", "Notre-Dame"}
            assert "\ufffd" in items["Cluny Abbey"]["fact"] and items["Paris"]["left_out"] is None
            left_out = items["Big donation"]["left_out"]
            assert left_out["facts"] or left_out["read_chars"] < left_out["changed_chars"]
            assert left_out["revision_chars"] > 0 and left_out["note"].startswith("only part of this edit was checked")
            big = [r for r in llm.requests if kind_of(r) == "verifier" and "gift number" in r["messages"][-1]["content"]]
            assert 1 <= len(big) <= 5  # at most watch.max_facts_per_edit facts of the 20 MB revision
            # every other edit was checked exactly once
            extractions = [r["messages"][-1]["content"] for r in llm.requests if kind_of(r) == "extract"]
            for marker in ("completed in 1890", "Mona Lisa", "founded in 1120", "construction began in 1163", "gift number 0 "):
                assert sum(marker in text for text in extractions) == 1, marker
            requests, fetched, connections = len(llm.requests), len(api.requests), len(stream.connections)
            # a restart goes on after the last event and runs nothing again
            with ServerThread(create_app(config, settings, retriever=retriever)) as server, httpx.Client(base_url=server.url) as web:
                _wait_for(lambda: len(stream.connections) > connections, "the restarted patrol to connect")
                time.sleep(1.0)
                again = web.get("/api/patrol", params={"flagged": "false"}).json()
            assert stream.connections[connections] == "9"
            assert again["edits"] == {"done": 5} and len(again["items"]) == len(patrol["items"])
            assert len(llm.requests) == requests and len(api.requests) == fetched
        finally:
            retriever.close()


async def patrol_once(config, store, source, *, until=None, max_events=None):
    """Run a patrol in this process until ``until()`` holds (or its events end); its stats."""
    import asyncio

    from claire.agent.runtime import open_retrieval
    from claire.llm.client import ChatClient
    from claire.jobs.runner import JobRunner
    from claire.livewiki.mediawiki import MediaWikiClient
    from claire.livewiki.patrol import Patrol
    from claire.livewiki.recentchanges import ChangeFilter

    llm_client = ChatClient.from_config(config.llm)
    retriever = await asyncio.to_thread(open_retrieval, config)
    wiki = MediaWikiClient(max_attempts=2, base_wait=0.0, max_wait=0.0)
    runner = JobRunner(config, store, llm=llm_client, retriever=retriever, concurrency=2)
    patrol = Patrol(config, store, runner, source, filters=ChangeFilter(), api_url=config.watch.api_url, wiki=wiki)
    try:
        running = asyncio.get_running_loop().create_task(patrol.run(max_events=max_events))
        if until is not None:
            deadline = time.monotonic() + 120
            while not until() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            patrol.stop()
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return patrol.stats
    finally:
        await wiki.aclose()
        await llm_client.aclose()
        retriever.close()


async def test_an_edit_whose_wiki_api_fails_is_tried_again_in_the_run_and_after_a_restart(tmp_path, wiki_index):
    from claire.livewiki.patrol import ChangeSource

    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        # in the run: two 500s (every try of the first attempt), then one more and the answer
        with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS, failures=3) as api, \
                EventStreamServer([change_event("Paris", 21, 22)], hold=60) as stream:
            config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, retry_wait=0.2)
            stats = await patrol_once(config, store, ChangeSource(url=stream.url),
                                      until=lambda: (store.job("enwiki:22") or {}).get("status") == "done")
        assert stats.requeued == 1 and len(api.requests) == 4
        assert store.job("enwiki:22")["status"] == "done" and store.job("enwiki:22")["retries"] == 1
        # across a restart: the API fails for the whole first run; the next run, with the API back, checks the edit
        recording = tmp_path / "recentchange.jsonl"
        recording.write_text(json.dumps(change_event("Louvre", 31, 32)) + "\n", encoding="utf-8")
        with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS, failures=10**6) as failing:
            config = config_for(llm, wiki_index, replay=str(recording), api_url=failing.api_url, retry_wait=0.5)
            stats = await patrol_once(config, store, ChangeSource(replay=recording))
        louvre = store.job("enwiki:32")
        assert stats.requeued == 1 and louvre["status"] == "queued" and "tried again" in louvre["error"]
        # run again at once (the wiki is back): a new run tries the waiting edit now, not after its wait
        # (a re-run within the wait used to read no event and check nothing)
        assert louvre["retry_at"] > time.time()
        with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS) as healthy:
            config = config_for(llm, wiki_index, replay=str(recording), api_url=healthy.api_url, retry_wait=0.5)
            stats = await patrol_once(config, store, ChangeSource(replay=recording))
        assert store.job("enwiki:32")["status"] == "done" and stats.checked == 1 and len(healthy.requests) == 1
    finally:
        store.close()


async def _patrol_one_edit_of_paris(answer, store, wiki_index, **settings):
    """Patrol a stream holding one edit of Paris (revision 21 to 22), the model answering with
    ``answer``, until the edit is done; the patrol's counts. ``settings``: ``system``."""
    from claire.livewiki.patrol import ChangeSource

    with MockOpenAIServer(answer) as llm, WikiApiServer(REVISIONS) as api, \
            EventStreamServer([change_event("Paris", 21, 22)], hold=60) as stream:
        config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, retry_wait=0.2)
        if "system" in settings:
            config = config.with_overrides({"agent.system": settings["system"]})
        return await patrol_once(config, store, ChangeSource(url=stream.url),
                                 until=lambda: (store.job("enwiki:22") or {}).get("status") == "done")


async def test_an_edit_met_by_a_failing_llm_endpoint_is_tried_again_not_skipped_or_failed(tmp_path, wiki_index):
    """The LLM endpoint answers 503 to the edit's extraction, then for a while to every check: the
    edit is put back in the queue each time (never 'skipped: no checkable fact' or an error), and
    once the endpoint is back its facts are checked and the planted date is flagged."""

    failing = {"extract": 2, "checks_until": None}  # one extraction call (two tries), then checks for 1.5 s

    def flaky(body: dict) -> dict:
        kind = kind_of(body)
        if kind == "extract" and failing["extract"] > 0:
            failing["extract"] -= 1
            return {"fault": "503"}
        if kind != "extract":
            failing["checks_until"] = failing["checks_until"] or time.monotonic() + 1.5
            if time.monotonic() < failing["checks_until"]:
                return {"fault": "503"}
        return model(body)

    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        stats = await _patrol_one_edit_of_paris(flaky, store, wiki_index)
        job = store.job("enwiki:22")
        facts = store.facts("enwiki:22")
        assert job["status"] == "done" and job["retries"] >= 2 and stats.requeued == job["retries"]
        assert stats.skipped == 0 and stats.failed == 0 and stats.checked == 1
        assert facts and all(f["status"] == "done" for f in facts)
        assert [f["fact"] for f in facts if f["verdict"] == "inconsistent"] == [
            "The Eiffel Tower was completed in 1890 for a world exhibition."]
    finally:
        store.close()


async def test_an_api_that_keeps_failing_or_hangs_is_unavailable_not_a_final_error():
    from claire.errors import ClaireError
    from claire.livewiki.mediawiki import MediaWikiClient, WikiUnavailable

    with WikiApiServer({1: (1, "Paris", "Text.")}, failures=3) as api:
        client = MediaWikiClient(max_attempts=2, base_wait=0.0, max_wait=0.0)
        try:
            with pytest.raises(WikiUnavailable):
                await client.revisions(api.api_url, [1])
            assert (await client.revisions(api.api_url, [1])).texts == {1: "Text."}  # a third 500, then the answer
        finally:
            await client.aclose()
    with WikiApiServer({1: (1, "Paris", "Caf\udce9.")}, latency=1.0) as slow:
        client = MediaWikiClient(max_attempts=2, base_wait=0.0, max_wait=0.0, timeout=0.2)
        try:
            with pytest.raises(WikiUnavailable):
                await client.revisions(slow.api_url, [1])
        finally:
            await client.aclose()
        client = MediaWikiClient()
        try:
            assert (await client.revisions(slow.api_url, [1])).texts == {1: "Caf\ufffd."}  # half a surrogate pair
            with pytest.raises(ClaireError) as refused:  # a 404 will not change: not worth trying again
                await client.revisions(slow.api_url.replace("/w/api.php", "/nothing"), [1])
        finally:
            await client.aclose()
    assert not isinstance(refused.value, WikiUnavailable)


# -- hostile input and failing services ---------------------------------------------------------------

async def test_a_transient_mediawiki_error_in_a_200_answer_queues_the_edit_again(tmp_path, wiki_index):
    """The Action API answers HTTP 200 with internal_api_error_DBConnectionError: the edit is tried
    again like after a 5xx, and checked once the wiki answers (item 2)."""
    from claire.livewiki.patrol import ChangeSource

    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS, failures=3, api_error="internal_api_error_DBConnectionError") as api, \
                EventStreamServer([change_event("Paris", 21, 22)], hold=60) as stream:
            config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, retry_wait=0.2)
            stats = await patrol_once(config, store, ChangeSource(url=stream.url),
                                      until=lambda: (store.job("enwiki:22") or {}).get("status") in ("done", "error"))
        assert store.job("enwiki:22")["status"] == "done" and stats.requeued == 1 and stats.failed == 0
    finally:
        store.close()


async def test_a_stop_takes_effect_at_once_while_the_stream_is_quiet(tmp_path, wiki_index):
    """Only keep-alive comments come: a stop ends the run within a second or two, not at the next
    event (item 3)."""
    import asyncio

    from claire.agent.runtime import open_retrieval
    from claire.llm.client import ChatClient
    from claire.jobs.runner import JobRunner
    from claire.livewiki.patrol import ChangeSource, Patrol

    store = JobStore(tmp_path / "jobs.sqlite")
    with MockOpenAIServer(model) as llm, EventStreamServer([], hold=60) as stream:
        config = config_for(llm, wiki_index, stream_url=stream.url)
        client = ChatClient.from_config(config.llm)
        retriever = await asyncio.to_thread(open_retrieval, config)
        patrol = Patrol(config, store, JobRunner(config, store, llm=client, retriever=retriever), ChangeSource(url=stream.url))
        running = asyncio.get_running_loop().create_task(patrol.run())
        while not stream.connections:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        asyncio.get_running_loop().call_soon(patrol.stop)  # as the SIGINT handler does
        stopped = time.monotonic()
        await asyncio.wait_for(running, timeout=10)
        assert time.monotonic() - stopped < 2
        await patrol.wiki.aclose()
        await client.aclose()
        retriever.close()
    store.close()


async def test_an_edit_that_keeps_failing_ends_as_failed_after_its_tries_and_can_be_queued_again(tmp_path, wiki_index):
    """The wiki's API fails for good: the edit is tried watch.retry_tries more times, then ends as
    failed with its reason (not retried for ever); a zero wait is refused; --retry-failed queues it
    once more (item 5)."""
    from claire.errors import ConfigError
    from claire.livewiki.patrol import ChangeSource

    with pytest.raises(ConfigError, match="retry_wait"):
        load_config(None, {"watch.retry_wait": 0})
    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        with MockOpenAIServer(model) as llm, WikiApiServer(REVISIONS, failures=10**6) as api, \
                EventStreamServer([change_event("Paris", 21, 22)], hold=60) as stream:
            config = config_for(llm, wiki_index, stream_url=stream.url, api_url=api.api_url, retry_wait=0.1,
                                retry_tries=2)
            stats = await patrol_once(config, store, ChangeSource(url=stream.url),
                                      until=lambda: (store.job("enwiki:22") or {}).get("status") == "error")
        job = store.job("enwiki:22")
        assert job["status"] == "error" and job["error"].startswith("gave up after 3 tries")
        assert stats.requeued == 2 and stats.failed == 1 and len(api.requests) == 3 * 2  # 2 attempts a try
        assert store.requeue_given_up("patrol") == ["enwiki:22"]
        again = store.job("enwiki:22")
        assert again["status"] == "queued" and again["retries"] == 0 and "gave_up" not in again["notes"]
    finally:
        store.close()


async def test_research_cut_short_by_a_429_is_retried_never_published_as_a_verdict(tmp_path, wiki_index):
    """The second controller call is answered 429 through every retry: the verifier still scores
    what was found, but that assessment is a failed fact, so the edit goes back to the queue (not
    'checked'), and once the endpoint answers its fact gets a real verdict (item 6)."""

    state: dict = {"until": None, "cut_short": 0}

    def flaky(body: dict) -> dict:
        if kind_of(body) == "controller":
            if first_step(body["messages"][-1]["content"]):
                return {"tool_calls": [{"name": "search", "arguments": {"query": "Eiffel Tower completed"}}]}
            state["until"] = state["until"] or time.monotonic() + 1.0
            if time.monotonic() < state["until"]:
                state["cut_short"] += 1
                return {"fault": "429", "retry_after": 0}
            return {"tool_calls": [{"name": "finish", "arguments": {}}]}
        return model(body)

    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        stats = await _patrol_one_edit_of_paris(flaky, store, wiki_index, system="claire")
        facts = store.facts("enwiki:22")
        assert state["cut_short"] >= 2 and stats.requeued >= 1 and stats.checked == 1
        assert [f["status"] for f in facts] == ["done"] and facts[0]["assessment"]["error"] is None
        assert facts[0]["verdict"] == "inconsistent"
    finally:
        store.close()
