"""One bad row never stops the job store: unreadable rows are skipped and counted, a file that is not
a store (or a damaged one) is one clear line naming it, a full disk loses nothing already stored,
a job that ends in error leaves its unchecked facts re-checkable, and a patrol's exit status follows
the documented codes."""

from __future__ import annotations

import logging
import sqlite3
from types import SimpleNamespace

import pytest

from claire.errors import ClaireError, ExitCode
from claire.jobs.store import JobStore


def a_store_with_facts(path):
    store = JobStore(path)
    job = store.create_job("scan", {"title": "Paris", "text": "t"})
    store.add_facts(job, [{"claim_id": f"c{i}", "fact": f"fact {i}", "claim": {"claim_id": f"c{i}", "text": f"fact {i}"}}
                          for i in range(3)])
    store.finish_fact(job, 0, {"score": 0.9, "verdict": "inconsistent", "error": None}, None)
    store.finish_fact(job, 1, {"score": 0.1, "verdict": "consistent", "error": None}, None)
    return store, job


def test_an_unreadable_row_is_skipped_and_counted(tmp_path, caplog):
    path = tmp_path / "jobs.sqlite"
    store, job = a_store_with_facts(path)
    store.close()
    with sqlite3.connect(path) as db:  # an old-format store (no outcome yet) with one garbled assessment
        db.execute("UPDATE facts SET assessment = '{not json', outcome = NULL WHERE idx = 0")
        db.execute("UPDATE facts SET outcome = NULL WHERE idx = 1")
        db.execute("UPDATE events SET data = 'garbage'")
    with caplog.at_level(logging.WARNING):
        store = JobStore(path)  # the backfill reads every row: one bad row must not stop it
        facts = store.facts(job)
    assert [f["idx"] for f in facts] == [1, 2]
    assert "could not be read are counted as failed" in caplog.text and "skipped 1 unreadable fact row" in caplog.text
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT outcome FROM facts WHERE idx = 0").fetchone()[0] == "failed"
        assert db.execute("SELECT outcome FROM facts WHERE idx = 1").fetchone()[0] == "consistent"
    store.close()


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_a_file_that_is_not_a_store_is_one_clear_line(tmp_path, content):
    path = tmp_path / "jobs.sqlite"
    path.write_bytes(content)
    with pytest.raises(ClaireError) as raised:
        JobStore(path)
    assert str(raised.value).startswith(f"{path} is not a CLAIRE job store") and "\n" not in str(raised.value)


def test_a_truncated_store_is_one_clear_line(tmp_path):
    path = tmp_path / "jobs.sqlite"
    store, job = a_store_with_facts(path)
    for i in range(200):
        store.add_event(job, "step", {"text": "x" * 500, "i": i})
    store.close()
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"jobs.sqlite{suffix}").unlink(missing_ok=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ClaireError, match="is not a CLAIRE job store or is damaged"):
        store = JobStore(path)
        store.events(job)
        store.facts(job)


def test_a_full_disk_is_one_clear_line_and_loses_nothing(tmp_path):
    path = tmp_path / "jobs.sqlite"
    store, job = a_store_with_facts(path)
    store._db.execute("PRAGMA max_page_count = " + str(store._db.execute("PRAGMA page_count").fetchone()[0]))
    with pytest.raises(ClaireError, match="cannot write the job store .*nothing stored before was lost"):
        for i in range(500):
            store.add_event(job, "step", {"text": "y" * 4000, "i": i})
    assert [f["idx"] for f in store.facts(job)] == [0, 1, 2]  # still readable, nothing rolled away
    store.close()


def test_a_job_that_ends_in_error_leaves_its_unchecked_facts_recheckable(tmp_path):
    store, job = a_store_with_facts(tmp_path / "jobs.sqlite")
    assert store.fail_unchecked(job, "not checked: the job stopped (boom)") == 1
    fact = store.facts(job)[2]
    assert fact["status"] == "error" and fact["outcome"] == "failed" and "boom" in fact["error"]
    assert store.retry_failed_facts(job) == 1 and store.facts(job)[2]["status"] == "pending"
    store.close()


def test_a_patrols_exit_status_follows_the_documented_codes():
    from claire.cli.watch import watch_exit_code

    def stats(**counts):
        return SimpleNamespace(**{"flagged": 0, "failed": 0, "checked": 0, "skipped": 0, **counts})

    assert watch_exit_code(stats(checked=3, flagged=1)) == ExitCode.FLAGGED
    assert watch_exit_code(stats(failed=4)) == ExitCode.ERROR
    assert watch_exit_code(stats(checked=2, failed=1)) == ExitCode.OK
    assert watch_exit_code(stats()) == ExitCode.OK


def test_the_store_and_its_event_stream_write_strict_json(tmp_path):
    import json
    import math

    store, job = a_store_with_facts(tmp_path / "jobs.sqlite")
    store.add_event(job, "fact", {"score": math.nan, "scores": [math.inf]})
    store.finish_fact(job, 2, {"score": math.nan, "verdict": None}, "a score that is not a finite number")
    with sqlite3.connect(tmp_path / "jobs.sqlite") as db:
        for (text,) in db.execute("SELECT data FROM events UNION ALL SELECT assessment FROM facts WHERE assessment IS NOT NULL"):
            json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} in the store"))
    assert store.events(job)[-1]["data"] == {"score": None, "scores": [None]}
    # the next fact's read of the events still works (json_extract over strict JSON)
    assert store.facts(job)[2]["assessment"]["score"] is None
    store.close()
