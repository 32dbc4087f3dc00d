"""The job store under stress: one bad write never wedges it, a job's events are those of its latest
attempt, and a stream id it never wrote is answered from the start."""

from __future__ import annotations




import sqlite3


import pytest


from claire.jobs.store import MAX_INTERRUPTIONS, JobStore


# -- one bad write never wedges the store ---------------------------------------------------

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


# -- a job's events are those of its latest attempt ---------------------------------------------

def test_events_do_not_pile_up_when_a_fact_is_checked_again(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job = store.create_job("scan", {"title": "Paris", "text": "..."})
    for _ in range(50):  # fifty failed attempts, each telling its start, a step and its end
        store.drop_events(job, "status")
        store.add_event(job, "status", {"status": "running"})
        store.drop_steps(job, 0)
        store.add_event(job, "fact_started", {"fact": 0})
        store.add_event(job, "step", {"fact": 0, "action_name": "search"})
        store.add_event(job, "fact", {"fact": 0, "error": "down"})
    assert [event["kind"] for event in store.events(job)] == ["status", "fact_started", "step", "fact"]
    store.close()


# -- a Last-Event-ID this server never wrote ------------------------------------------------------

@pytest.mark.parametrize("header", ["\u00b2", "9" * 5000, "9" * 20, "-3", "1e3", "", None])
def test_a_bad_last_event_id_starts_the_stream_from_the_beginning(header):
    from claire.web.events import resume_after

    assert resume_after(header) == 0  # neither a ValueError (500) nor SQLite's OverflowError mid-stream


def test_a_good_last_event_id_resumes_after_it():
    from claire.web.events import resume_after

    assert resume_after("42") == 42 and resume_after(" 7 ") == 7
