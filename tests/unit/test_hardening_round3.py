"""Regression tests for the third hardening round (issue 36): the job store's writes, poison and
hostile change events, the stream's ids and reconnects, the wiki's address, calibrator files, the
terminal filter, the search endpoint and the server's timeouts. Each failed before its fix."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time

import httpx
import numpy as np
import pytest
from rich.text import Text

from claire.cli.terminal import terminal_console
from claire.errors import ClaireError, ConfigError
from claire.indexes.http_search import answer
from claire.tasks.calibration import Calibrator, load_calibration, scored_pairs
from claire.tasks.wikicollide.scoring import recalibrate
from claire.testing.wiki_doubles import change_event
from claire.jobs.store import MAX_INTERRUPTIONS, JobStore
from claire.livewiki.patrol import ChangeSource
from claire.livewiki.recentchanges import parse_change, stream_changes, usable_event_id, wiki_host


# -- 1. one bad write never wedges the store ---------------------------------------------------

def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job = store.create_job("patrol", {"title": "Caf\udce9"})
    store.add_facts(job, [{"claim_id": "a", "fact": "It opened in 1889\ud800.", "claim": {"context": "x\udfff"}}])
    store.set_status(job, "error", "failed on \ud800")
    assert store.job(job)["request"]["title"] == "Caf\ufffd" and store.job(job)["error"] == "failed on \ufffd"
    assert store.facts(job)[0]["fact"] == "It opened in 1889\ufffd." and store.facts(job)[0]["claim"] == {"context": "x\ufffd"}
    store.close()


def test_a_failing_write_is_rolled_back_whole_and_the_next_writes_still_commit(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    edit = store.create_job("patrol", {})
    with pytest.raises(KeyError):  # the second fact is broken: neither is stored
        store.add_facts(edit, [{"claim_id": "a", "fact": "One.", "claim": {}}, {"claim_id": "b"}])
    assert store.facts(edit) == []
    store.set_status(edit, "error", "broken")  # the job ends as error alone ...
    scan = store.create_job("scan", {"title": "Paris"})  # ... and a user's scan after it is stored for good
    store.add_facts(scan, [{"claim_id": "c", "fact": "Two.", "claim": {}}])
    store.close()  # as at SIGTERM: nothing is left in an open transaction to roll back
    again = JobStore(tmp_path / "jobs.sqlite")
    assert again.job(scan)["status"] == "queued" and [f["fact"] for f in again.facts(scan)] == ["Two."]
    assert again.job(edit)["status"] == "error"
    again.close()


def test_a_job_interrupted_too_often_ends_as_an_error_instead_of_running_again(tmp_path):
    path = tmp_path / "jobs.sqlite"
    store = JobStore(path)
    crashing = store.create_job("scan", {"title": "Bad"})
    waiting = store.create_job("scan", {"title": "Fine"})  # queued, never started: never counted
    store.close()
    for start in range(MAX_INTERRUPTIONS + 1):
        store = JobStore(path)
        if start:
            resumed = [job["id"] for job in store.resumable_jobs()]
            assert waiting in resumed and (crashing in resumed) == (start <= MAX_INTERRUPTIONS)
        store.set_status(crashing, "running")  # ... and the process dies during it
        store.close()
    store = JobStore(path)
    assert [job["id"] for job in store.resumable_jobs()] == [waiting]
    assert store.job(crashing)["status"] == "error" and "interrupted" in store.job(crashing)["error"]
    store.close()


def test_a_store_written_before_the_new_columns_is_read_and_extended(tmp_path):
    path = tmp_path / "jobs.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, request TEXT NOT NULL,"
                   " error TEXT, created REAL NOT NULL, updated REAL NOT NULL)")
        db.execute("INSERT INTO jobs VALUES ('old', 'scan', 'running', '{}', NULL, 1, 1)")
    store = JobStore(path)
    assert store.job("old")["notes"] == {} and store.job("old")["interruptions"] == 0
    assert store.requeue("old", retry_at=5.0, reason="later") == 1 and store.job("old")["retry_at"] == 5.0
    store.close()


# -- 2. poison events are bad events --------------------------------------------------------------

def _raw(**changes: object) -> str:
    event = change_event("Paris", 21, 22)
    event.update(changes)
    return json.dumps(event)


@pytest.mark.parametrize("data", [
    _raw(title="Caf\udce9"), _raw(comment="\ud800"), _raw(user="\udfff"),
    _raw().replace('"namespace": 0', '"namespace": 1e999'),
    _raw().replace('"new": 22', '"new": Infinity'),
    _raw().replace('"new": 22', '"new": NaN'),
    _raw(namespace=1.5), _raw(timestamp=10**400), _raw(timestamp=-1), _raw(timestamp="soon"),
    _raw(revision={"old": 21, "new": 10**30}), _raw(title=["a", "list"]),
    "[" * 100_000 + "]" * 100_000, '{"x": "' + "y" * 1_100_000 + '"}',
])
def test_an_event_no_wiki_would_send_is_a_value_error_not_a_crash(data):
    with pytest.raises(ValueError):
        parse_change(data)


def test_a_good_event_still_reads_with_numbers_in_any_json_spelling():
    change = parse_change(_raw(namespace=0.0, timestamp="1700000000.5", revision={"old": "21", "new": 22.0}))
    assert (change.namespace, change.old_revision, change.new_revision, change.timestamp) == (0, 21, 22, 1700000000.5)


# -- 3. stream ids and 6. reconnects ---------------------------------------------------------------

def _sse(body: str) -> httpx.Response:
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def test_an_event_id_that_cannot_be_sent_back_is_never_the_position():
    assert usable_event_id('[{"topic":"x","offset":5}]') and not usable_event_id("pos-é") and not usable_event_id("x" * 2000)
    sent: list[str | None] = []
    event = json.dumps(change_event("Paris", 21, 22))

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("last-event-id"))
        return _sse(f"retry: 100\nid: 7\ndata: {event}\n\nid: pos-é\ndata: {event}\n\nid: 9\ndata: {event}\n\n"
                    if len(sent) == 1 else f"retry: 100\nid: ünïcode\ndata: {event}\n\n")

    async def read() -> list:
        got = []
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async for position, _ in stream_changes("http://stream.test/rc", last_event_id="saved-é", user_agent="t",
                                                    client=client):
                got.append(position)
                if len(got) == 4:
                    return got
        return got

    positions = asyncio.run(read())
    assert positions == ["7", "7", "9", "9"]  # the non-ASCII id keeps the position before it
    assert sent == [None, "9"]  # a saved position that cannot be sent is not sent either


def test_a_stream_that_closes_at_once_is_reconnected_with_a_growing_wait_not_in_a_storm():
    connections: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        connections.append(time.monotonic())
        return _sse("retry: 100\n\n")

    async def read(seconds: float) -> None:
        end = time.monotonic() + seconds
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async for _ in stream_changes("http://stream.test/rc", user_agent="t", client=client,
                                          stop=lambda: time.monotonic() > end):
                pass

    asyncio.run(read(2.0))
    # waits of 0.2, 0.4, 0.8 s (the server's 100 ms retry, doubled per empty connection)
    assert 3 <= len(connections) <= 5, len(connections)
    gaps = np.diff(connections)
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:]))


# -- 10. the wiki's address comes from its id; no credentials are kept --------------------------

def test_an_event_cannot_send_the_patrol_to_another_server():
    assert wiki_host("enwiki") == "en.wikipedia.org" and wiki_host("dewiktionary") == "de.wiktionary.org"
    assert wiki_host("zh_min_nanwiki") == "zh-min-nan.wikipedia.org" and wiki_host("wikidatawiki") == "www.wikidata.org"
    assert wiki_host("Robert'); DROP") is None
    honest = parse_change(_raw(server_url="https://en.wikipedia.org"))
    assert honest.api_url() == "https://en.wikipedia.org/w/api.php"
    for server in ("http://127.0.0.1:8080", "https://en.wikipedia.org.evil.test", "https://de.wikipedia.org"):
        with pytest.raises(ClaireError, match="not its address"):
            parse_change(_raw(server_url=server)).api_url()
    sneaky = parse_change(_raw(server_url="https://user:hunter2@en.wikipedia.org", server_script_path="@evil.test"))
    assert sneaky.api_url() == "https://en.wikipedia.org/w/api.php"
    assert "hunter2" not in json.dumps(sneaky.__dict__) and "evil" not in sneaky.diff_url()
    assert sneaky.diff_url() == "https://en.wikipedia.org/w/index.php?diff=22&oldid=21"
    private = parse_change(_raw(wiki="mywiki", server_url="http://admin:pw@wiki.internal:8080"))
    assert private.diff_url() == "http://wiki.internal:8080/w/index.php?diff=22&oldid=21"


def test_a_stream_url_with_credentials_is_not_a_position_key():
    source = ChangeSource(url="https://bot:s3cret@stream.example/rc")
    assert source.key == "stream:https://stream.example/rc" and source.older_key == "stream:https://bot:s3cret@stream.example/rc"


def test_a_position_saved_under_a_url_with_credentials_moves_to_the_clean_key(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    store.set_position("stream:https://bot:s3cret@stream.example/rc", "41")
    store.move_position("stream:https://bot:s3cret@stream.example/rc", "stream:https://stream.example/rc")
    assert store.position("stream:https://stream.example/rc") == "41"
    assert store.position("stream:https://bot:s3cret@stream.example/rc") is None
    store.close()


# -- 9. calibrator files ---------------------------------------------------------------------------

FITTED = {"fitted_on": 4, "source": "runs/validation"}


@pytest.mark.parametrize("content, problem", [
    ({**FITTED, "method": "isotonic", "points": [[0, 1], [1, 0]]}, "invert"),
    ({**FITTED, "method": "isotonic", "points": [[0.5, 0.2], [0.1, 0.3]]}, "not sorted"),
    ({**FITTED, "method": "isotonic", "points": [[0, 0], [1, 1.5]]}, "outside"),
    ({**FITTED, "method": "isotonic", "points": [[0, 0], [1]]}, "pair"),
    ({**FITTED, "method": "isotonic", "points": [[i / 200_000, i / 200_000] for i in range(200_001)]}, "at most"),
    ({**FITTED, "method": "platt", "slope": "abc", "intercept": 0}, "slope must be a number"),
    ({**FITTED, "method": "platt", "slope": -3.0, "intercept": 0}, "negative slope"),
    ({**FITTED, "method": "platt", "slope": 2, "intercept": 0, "extra": 1}, "unknown"),
    ('{"fitted_on": 4, "source": "v", "method": "platt", "slope": 1' + "0" * 400 + ', "intercept": 0}', "finite"),
    ('{"fitted_on": 4, "source": "v", "method": "platt", "slope": NaN, "intercept": 0}', "finite"),
    ("[" * 50_000 + "]" * 50_000, "nested"),
    ('"just text"', "not a JSON object"),
])
def test_a_calibrator_file_is_checked_and_refused_in_one_line(tmp_path, content, problem):
    path = tmp_path / "calibrator.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as error:
        load_calibration(path)
    assert "\n" not in str(error.value)


def test_a_valid_calibrator_still_loads_and_maps_scores():
    calibrator = Calibrator.from_dict({"method": "isotonic", "fitted_on": 4, "source": "v",
                                       "points": [[0.0, 0.1], [0.5, 0.1], [0.5, 0.4], [1.0, 0.9]]})
    assert calibrator.probability(1.0) == pytest.approx(0.9)


def test_a_validation_run_with_a_nan_score_is_a_config_error_not_a_scikit_learn_one():
    rows = [{"claim_id": str(i), "score": s, "label": label, "error": None}
            for i, (s, label) in enumerate([(0.9, "inconsistent"), (float("nan"), "consistent"), (0.1, "consistent")])]
    with pytest.raises(ConfigError, match="not a finite number"):
        scored_pairs(rows)
    with pytest.raises(ConfigError, match="runs/validation cannot calibrate"):
        recalibrate(rows[:1] + rows[2:], rows, source="runs/validation")
    with pytest.raises(ConfigError, match="invert"):
        Calibrator.fit(np.array([0.9, 0.8, 0.1, 0.2]), np.array([0, 0, 1, 1]), method="platt")


# -- 11. the terminal filter and the search endpoint ---------------------------------------------

def test_the_word_after_an_osc_whose_bel_rich_dropped_stays_visible():
    console = terminal_console(record=True, force_terminal=True, width=100)
    console.print(Text("…released \x1b]0;PWNED\x07the Compaq"))
    console.print("…released \x1b]0;PWNED\x07the Compaq")
    shown = console.export_text()
    assert shown.count("the Compaq") == 2 and "\x1b]" not in shown and "\x07" not in shown


def test_a_lone_surrogate_in_exclude_title_is_a_422():
    status, payload = answer(None, {"query": "tower", "exclude_title": "Caf\udce9"}, index="demo")  # type: ignore[arg-type]
    assert status == 422 and payload["detail"].startswith("exclude_title") and "surrogate" in payload["detail"]
    status, payload = answer(None, {"query": "tow\ud800er"}, index="demo")  # type: ignore[arg-type]
    assert status == 422 and payload["detail"].startswith("query")


def test_the_watch_line_says_how_many_edits_wait_to_be_tried_again():
    from claire.cli.watch import watch_line
    from claire.livewiki.patrol import PatrolStats

    stats = PatrolStats(seen=5, kept=3, requeued=2, checked=1)
    assert watch_line(stats, 200) == "events 5 · kept 3 · checked 1 · flagged 0 · retrying 2"
    assert "retrying" not in watch_line(PatrolStats(seen=1), 200)
