"""The job store shared by processes: a writer waits for another one holding the lock (bounded), a
second patrol on one store is refused in one line, and ``claire serve`` over a file that is not a
store says so instead of a traceback and a wrong "address in use"."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from filelock import FileLock

from claire.jobs.store import JobStore
from claire.testing.cli import run_claire

PATROL = Path(__file__).resolve().parents[2] / "docs" / "examples" / "patrol" / "recentchange.jsonl"


def test_a_writer_waits_for_another_holding_the_lock(tmp_path):
    path = tmp_path / "jobs.sqlite"
    store = JobStore(path)
    job = store.create_job("check", {"fact": "f"})
    held = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(7)  # longer than sqlite's default wait of 5 s
        other.execute("COMMIT")
        other.close()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    started = time.monotonic()
    store.add_event(job, "step", {"n": 1})  # waits, then writes
    assert time.monotonic() - started >= 5
    holder.join()
    assert store.events(job)[0]["data"] == {"n": 1}
    store.close()


def test_a_second_patrol_on_one_store_is_refused(tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    web = tmp_path / "web"
    web.mkdir()
    with FileLock(f"{web / 'jobs.sqlite'}.patrol.lock"):  # the first patrol
        result = run_claire("watch", "--replay", str(PATROL), "--data-dir", str(web), "--api-url",
                            "http://127.0.0.1:9/w/api.php", "--base-url", "http://127.0.0.1:9/v1", cache=tmp_path,
                            env={"OPENAI_API_KEY": "sk-patrol-lock"})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "another patrol" in result.stderr and "one patrol per store" in result.stderr
    assert "internal error" not in result.stderr


def test_serve_over_a_file_that_is_not_a_store_says_so(tmp_path):
    web = tmp_path / "web"
    web.mkdir()
    (web / "jobs.sqlite").write_bytes(b"garbage, not sqlite " * 200)
    result = run_claire("serve", "--data-dir", str(web), "--port", "0", "--base-url", "http://127.0.0.1:9/v1",
                        cache=tmp_path, env={"OPENAI_API_KEY": "sk-serve-store"})
    assert result.returncode == 2
    assert "is not a CLAIRE job store" in result.stderr and "in use" not in result.stderr
    assert "Traceback" not in result.stderr


def test_the_documented_replay_runs_again_from_the_start(tmp_path, copy_demo_index):
    """docs/patrol.md's recorded patrol, twice on one store: the second run says the recording was read
    to its end and offers --from-start, which reads it again (its edits, already checked, not again);
    a flagged fact makes the exit status 1, as for every command."""
    import json

    from claire.testing.mock_openai import MockOpenAIServer
    from claire.testing.oracle import oracle_responder
    from claire.testing.wiki_doubles import WikiApiServer

    copy_demo_index(tmp_path / "indexes")
    recorded = json.loads((PATROL.parent / "revisions.json").read_text())["revisions"]
    revisions = {int(revid): (int(page), str(title), str(text)) for revid, (page, title, text) in recorded.items()}
    with MockOpenAIServer(oracle_responder(), model="oracle") as llm, WikiApiServer(revisions) as api:
        def watch(*more: str):
            return run_claire("watch", "--replay", str(PATROL), "--api-url", f"http://127.0.0.1:{api.port}/w/api.php",
                              "--base-url", llm.base_url, "--model", "oracle", "--data-dir", str(tmp_path / "web"),
                              *more, cache=tmp_path)

        first = watch()
        assert first.returncode == 1, first.stderr  # the planted fact is flagged
        again = watch()
        assert again.returncode == 0 and "give --from-start to read it again" in again.stdout
        restarted = watch("--from-start")
        assert "2 events read" in restarted.stdout and "give --from-start" not in restarted.stdout
        assert llm.calls and "repeated" in restarted.stdout
