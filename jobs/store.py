"""The web app's job store: checks, scans, their facts, live events and editors' reviews in one
SQLite file, so a server restart loses no finished work and can resume unfinished scans.

Every write is a transaction of its own that commits at once (WAL journal) or, when any part of
it fails, is rolled back whole: one bad row can never leave the connection inside a transaction
that swallows every later write. Text is stored as valid Unicode (half a surrogate pair, from an
edit or a model's answer, becomes U+FFFD). The store is shared by the event loop and worker
threads behind one lock; rows hold JSON text for the parts whose shape belongs to other layers
(the request, the Assessment, a step event).

A row that cannot be read (its JSON torn or garbled) is skipped wherever rows are read, with a
count in the log; a file that is not a store, a store locked by another writer for longer than
:data:`BUSY_TIMEOUT`, and a full disk are each one clear error naming the file (a failed write is
rolled back whole: nothing already stored is lost).

A job found running when a process starts was interrupted (the process stopped or died during
it); it is started again, but one interrupted :data:`MAX_INTERRUPTIONS` times ends as an error,
so a job that brings its process down cannot do so on every restart. A job may also wait in the
queue until a time (``retry_at``: the patrol's edits whose wiki could not be reached).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from claire.settings import data_dir
from claire.domain import recorded_outcome
from claire.errors import ClaireError
from claire.files import valid_text, strict_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, request TEXT NOT NULL,
    error TEXT, created REAL NOT NULL, updated REAL NOT NULL, interruptions INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0, retry_at REAL, notes TEXT);
CREATE TABLE IF NOT EXISTS facts (
    job_id TEXT NOT NULL, idx INTEGER NOT NULL, claim_id TEXT NOT NULL, fact TEXT NOT NULL,
    claim TEXT NOT NULL, span_start INTEGER, span_end INTEGER, status TEXT NOT NULL,
    score REAL, verdict TEXT, assessment TEXT, error TEXT, outcome TEXT, PRIMARY KEY (job_id, idx));
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_id, seq);
CREATE TABLE IF NOT EXISTS reviews (
    job_id TEXT NOT NULL, claim_id TEXT NOT NULL, fact TEXT NOT NULL, decision TEXT NOT NULL,
    comment TEXT, created REAL NOT NULL, PRIMARY KEY (job_id, claim_id));
CREATE TABLE IF NOT EXISTS positions (
    source TEXT PRIMARY KEY, position TEXT, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS pending_pages (
    page_key TEXT PRIMARY KEY, job_id TEXT NOT NULL, page TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_kind ON jobs (kind, created);
"""

log = logging.getLogger(__name__)
BUSY_TIMEOUT = 60.0
"""Seconds a write waits for another process holding the store's lock before it gives up."""

UNFINISHED = ("queued", "running")
MAX_INTERRUPTIONS = 3
"""Times a job may be interrupted (found running when a process starts) before it ends as an error."""

ADDED_COLUMNS = {  # columns added after the first release, for stores written before them
    "jobs": {"interruptions": "INTEGER NOT NULL DEFAULT 0", "retries": "INTEGER NOT NULL DEFAULT 0", "retry_at": "REAL",
             "notes": "TEXT"},
    "facts": {"outcome": "TEXT"},  # flagged / consistent / failed, as claire.domain decided it when the fact was kept
}


def default_store_path(folder: Path | None = None) -> Path:
    """The job store's file: ``jobs.sqlite`` in ``folder``, else in ``web/`` of the user data folder
    (shared by ``claire serve`` and ``claire watch``)."""
    return (folder or data_dir() / "web") / "jobs.sqlite"


def _decoded(text: Any, empty: Any) -> Any:
    """JSON text decoded (``empty`` for none), or None when it cannot be read."""
    if not text:
        return empty
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _dumps(value: Any) -> str:
    return valid_text(strict_json(value, default=str))


def _clean(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(valid_text(a) if isinstance(a, str) else a for a in args)


class JobStore:
    """Jobs, facts, events and reviews in one SQLite file, safe to share between threads."""
    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ClaireError(f"cannot create the folder of the job store {self.path}: {error.strerror or error}") from None
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT)
            self._db.row_factory = sqlite3.Row
            with self._lock:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(SCHEMA)
                for table, columns in ADDED_COLUMNS.items():
                    present = {row["name"] for row in self._db.execute(f"PRAGMA table_info({table})")}
                    for column, kind in columns.items():
                        if column not in present:
                            self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                self._decide_outcomes()
        except sqlite3.Error as error:
            raise self._problem(error) from None

    def _problem(self, error: sqlite3.Error) -> ClaireError:
        """A database error as one line naming the store."""
        text = str(error).lower()
        if "not a database" in text or "malformed" in text or "file is encrypted" in text:
            return ClaireError(f"{self.path} is not a CLAIRE job store or is damaged ({error}): move it aside "
                               "(a new store is made in its place) or point --data-dir elsewhere")
        if "locked" in text or "busy" in text:
            return ClaireError(f"the job store {self.path} stayed locked by another process for {BUSY_TIMEOUT:g} s: "
                               "is another claire serve or claire watch writing to it?")
        if "full" in text or "disk i/o" in text or "readonly" in text or "read-only" in text:
            return ClaireError(f"cannot write the job store {self.path}: {error} (nothing stored before was lost; "
                               "free some space or make it writable, then run again)")
        return ClaireError(f"the job store {self.path}: {error}")

    def _decide_outcomes(self) -> None:
        """Give each finished fact of a store written before the outcome column its outcome (once);
        a fact whose stored assessment cannot be read is failed (it holds no verdict), and counted."""
        rows = self._db.execute("SELECT job_id, idx, status, verdict, error, assessment FROM facts "
                                "WHERE outcome IS NULL AND status IN ('done', 'error')").fetchall()
        unreadable = 0
        for row in rows:
            stored = _decoded(row["assessment"], {})
            if isinstance(stored, dict):
                outcome = recorded_outcome({**stored, **dict(row)})
            else:  # no verdict can be read back from it
                unreadable += 1
                outcome = "failed"
            self._db.execute("UPDATE facts SET outcome = ? WHERE job_id = ? AND idx = ?", (outcome, row["job_id"], row["idx"]))
        if unreadable:
            log.warning("%s: %d fact(s) whose stored assessment could not be read are counted as failed", self.path,
                        unreadable)

    def _readable(self, rows: list[Any], decode: Any, what: str) -> list[Any]:
        """``decode(row)`` of each row, the rows that cannot be decoded left out and counted in the log."""
        found, skipped = [], 0
        for row in rows:
            try:
                found.append(decode(row))
            except (ValueError, TypeError, AttributeError):
                skipped += 1
        if skipped:
            log.warning("%s: skipped %d unreadable %s row(s)", self.path, skipped, what)
        return found

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, _clean(args)).fetchall()
            except sqlite3.DatabaseError as error:
                raise self._problem(error) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside a transaction of its own: committed at the end, rolled back
        whole when anything in it fails (then the failure goes on up, a database error as one
        clear line). Another writer's lock is waited for up to :data:`BUSY_TIMEOUT` seconds."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as error:
                raise self._problem(error) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(error, sqlite3.DatabaseError):
                    raise self._problem(error) from None
                raise

    def _write(self, sql: str, *args: Any) -> int:
        with self._transaction() as db:
            return db.execute(sql, _clean(args)).lastrowid or 0

    # -- jobs ------------------------------------------------------------------------------
    def create_job(self, kind: str, request: dict[str, Any]) -> str:
        """Store a new queued job of ``kind`` for ``request``; its new id."""
        job_id = uuid.uuid4().hex[:16]
        now = time.time()
        self._write("INSERT INTO jobs (id, kind, status, request, created, updated) VALUES (?, ?, 'queued', ?, ?, ?)",
                    job_id, kind, _dumps(request), now, now)
        return job_id

    def ensure_job(self, kind: str, job_id: str, request: dict[str, Any]) -> bool:
        """Store a queued job under a chosen id unless one is there already; whether it was new
        (an edit delivered twice is one job)."""
        now = time.time()
        with self._transaction() as db:
            cursor = db.execute("INSERT OR IGNORE INTO jobs (id, kind, status, request, created, updated)"
                                " VALUES (?, ?, 'queued', ?, ?, ?)", _clean((job_id, kind, _dumps(request), now, now)))
            return cursor.rowcount == 1

    def job(self, job_id: str) -> dict[str, Any] | None:
        """The job ``job_id`` with its request (and notes) decoded, or None."""
        rows = self._rows("SELECT * FROM jobs WHERE id = ?", job_id)
        if not rows:
            return None
        def decode(found: Any) -> dict[str, Any]:
            row = dict(found)
            row["request"] = json.loads(row["request"])
            row["notes"] = json.loads(row["notes"]) if row["notes"] else {}
            return row

        decoded = self._readable(rows, decode, "job")
        return decoded[0] if decoded else None

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        """Record a job's new status (and the error that ended it)."""
        self._write("UPDATE jobs SET status = ?, error = ?, retry_at = NULL, updated = ? WHERE id = ?",
                    status, error, time.time(), job_id)

    def restart(self, job_id: str) -> None:
        """A person starts a finished job again (a re-check): it is queued, and its count of
        interruptions and retries begins anew."""
        self._write("UPDATE jobs SET status = 'queued', error = NULL, retry_at = NULL, interruptions = 0, retries = 0,"
                    " updated = ? WHERE id = ?", time.time(), job_id)

    def requeue_given_up(self, kind: str = "patrol") -> list[str]:
        """Queue once more the jobs of ``kind`` that ended after their tries ran out (their wiki or LLM
        endpoint kept failing), their failed facts pending again; their ids."""
        ids = [row["id"] for row in self._rows(
            "SELECT id FROM jobs WHERE kind = ? AND status = 'error' AND json_extract(notes, '$.gave_up') IS NOT NULL",
            kind)]
        for job_id in ids:
            self.retry_failed_facts(job_id)
            self.restart(job_id)
            self._write("UPDATE jobs SET notes = json_remove(notes, '$.gave_up') WHERE id = ?", job_id)
        return ids

    def requeue(self, job_id: str, *, retry_at: float, reason: str) -> int:
        """Put a job back in the queue until ``retry_at`` (seconds since the epoch), saying why;
        how many times it has been put back."""
        with self._transaction() as db:
            db.execute("UPDATE jobs SET status = 'queued', error = ?, retry_at = ?, retries = retries + 1, updated = ?"
                       " WHERE id = ?", _clean((reason, retry_at, time.time(), job_id)))
            row = db.execute("SELECT retries FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return row["retries"] if row else 0

    def add_notes(self, job_id: str, notes: dict[str, Any]) -> None:
        """Add to what is noted about how a job went (e.g. what the patrol left out of an edit)."""
        with self._transaction() as db:
            row = db.execute("SELECT notes FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is not None:
                merged = {**(_decoded(row["notes"], {}) or {}), **notes}  # unreadable notes are replaced
                db.execute("UPDATE jobs SET notes = ? WHERE id = ?", (_dumps(merged), job_id))

    def unfinished_jobs(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The jobs still queued or running, oldest first: of ``kind``, or (without one) the web
        app's checks and scans."""
        kinds = (kind,) if kind else ("check", "scan")
        ids = [r["id"] for r in self._rows(
            f"SELECT id FROM jobs WHERE status IN (?, ?) AND kind IN ({', '.join('?' * len(kinds))}) ORDER BY created",
            *UNFINISHED, *kinds)]
        return [job for job in (self.job(i) for i in ids) if job]

    def resumable_jobs(self, kind: str | None = None, *, max_interruptions: int = MAX_INTERRUPTIONS) -> list[dict[str, Any]]:
        """The unfinished jobs a starting process should start again (as :meth:`unfinished_jobs`).
        Each one found running was interrupted once more and goes back to the queue; one
        interrupted more than ``max_interruptions`` times ends as an error instead."""
        kinds = (kind,) if kind else ("check", "scan")
        marks = ", ".join("?" * len(kinds))
        with self._transaction() as db:
            db.execute(f"UPDATE jobs SET interruptions = interruptions + 1, status = 'queued' WHERE status = 'running'"
                       f" AND kind IN ({marks})", kinds)
            reason = (f"stopped: its check was interrupted more than {max_interruptions} times (it may be what "
                      "stopped the process), so it is not started again by itself; re-check it to try once more")
            ended = [row["id"] for row in db.execute(
                f"SELECT id FROM jobs WHERE status = 'queued' AND interruptions > ? AND kind IN ({marks})",
                (max_interruptions, *kinds))]
            for job_id in ended:  # its unchecked facts fail with it, so a re-check reaches them
                db.execute("UPDATE jobs SET status = 'error', error = ?, updated = ? WHERE id = ?",
                           (reason, time.time(), job_id))
                db.execute("UPDATE facts SET status = 'error', outcome = 'failed', error = ? WHERE job_id = ? AND status IN ('pending', 'running')",
                           (reason, job_id))
        return self.unfinished_jobs(kind)

    # -- facts -----------------------------------------------------------------------------
    def add_facts(self, job_id: str, facts: list[dict[str, Any]]) -> None:
        """Store a job's facts as pending, numbered in order (facts already stored are kept): all
        of them, or (when one cannot be stored) none."""
        with self._transaction() as db:
            for index, fact in enumerate(facts):
                db.execute(
                    "INSERT OR IGNORE INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', NULL, NULL, NULL, NULL, NULL)",
                    _clean((job_id, index, fact["claim_id"], fact["fact"], _dumps(fact["claim"]), fact.get("start"),
                            fact.get("end"))),
                )

    def recent_scans(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest scans, newest first: id, title, status, when, and fact counts (no texts)."""
        rows = self._rows(
            "SELECT j.id, j.status, j.request, j.error, j.created, COUNT(f.idx) AS facts,"
            " SUM(f.status IN ('done', 'error')) AS finished, SUM(f.status = 'error') AS errors,"
            " SUM(f.outcome = 'flagged') AS flagged"
            " FROM jobs j LEFT JOIN facts f ON f.job_id = j.id WHERE j.kind = 'scan'"
            " GROUP BY j.id ORDER BY j.created DESC LIMIT ?", limit)
        return self._readable(rows, lambda row: {
            "id": row["id"], "title": json.loads(row["request"]).get("title"), "status": row["status"],
            "error": row["error"], "created": row["created"], "facts": row["facts"],
            "checked": (row["finished"] or 0) - (row["errors"] or 0), "errors": row["errors"] or 0,
            "flagged": row["flagged"] or 0}, "scan")

    def facts(self, job_id: str) -> list[dict[str, Any]]:
        """A job's facts in order, with their claim and assessment decoded."""
        def decode(row: Any) -> dict[str, Any]:
            fact = dict(row)
            fact["claim"] = json.loads(fact["claim"])
            fact["assessment"] = json.loads(fact["assessment"]) if fact["assessment"] else None
            return fact

        return self._readable(self._rows("SELECT * FROM facts WHERE job_id = ? ORDER BY idx", job_id), decode, "fact")

    def set_fact_status(self, job_id: str, index: int, status: str) -> None:
        """Record the status of fact ``index`` of a job."""
        self._write("UPDATE facts SET status = ? WHERE job_id = ? AND idx = ?", status, job_id, index)

    def fail_unchecked(self, job_id: str, reason: str) -> int:
        """End every fact of a job still pending or running as failed with ``reason`` (the job itself
        ended in error), so a re-check takes them up; how many."""
        with self._transaction() as db:
            return db.execute("UPDATE facts SET status = 'error', outcome = 'failed', error = ? WHERE job_id = ? "
                              "AND status IN ('pending', 'running')", _clean((reason, job_id))).rowcount

    def retry_failed_facts(self, job_id: str, indexes: list[int] | None = None) -> int:
        """Make the job's failed facts (those of ``indexes``, else all) pending again, their next
        check starting afresh (a review of a failed fact goes with it: a review belongs to the
        verdict it reviewed); how many."""
        if indexes is not None and not indexes:
            return 0
        wanted = "" if indexes is None else f" AND idx IN ({', '.join('?' * len(indexes))})"
        with self._transaction() as db:
            db.execute("DELETE FROM reviews WHERE job_id = ? AND claim_id IN (SELECT claim_id FROM facts WHERE job_id = ?"
                       f" AND status = 'error'{wanted})", (job_id, job_id, *(indexes or ())))
            return db.execute("UPDATE facts SET status = 'pending', score = NULL, verdict = NULL, outcome = NULL, assessment = NULL, "
                              f"error = NULL WHERE job_id = ? AND status = 'error'{wanted}",
                              (job_id, *(indexes or ()))).rowcount

    def finish_fact(self, job_id: str, index: int, assessment: dict[str, Any] | None, error: str | None) -> None:
        """Record a checked fact's assessment or error. A check that met an error is a failed fact
        (to be re-checked), whatever score its cut-short research reached: it keeps its assessment
        for reading but no score or verdict; one without an error is done."""
        failed = assessment is None or error is not None
        score = None if failed else assessment.get("score")
        verdict = None if failed else assessment.get("verdict")
        decided = "failed" if failed else recorded_outcome(assessment)
        self._write(
            "UPDATE facts SET status = ?, score = ?, verdict = ?, assessment = ?, error = ?, outcome = ? "
            "WHERE job_id = ? AND idx = ?",
            "error" if failed else "done", score, verdict, _dumps(assessment) if assessment is not None else None,
            error, decided, job_id, index,
        )

    # -- events ----------------------------------------------------------------------------
    def add_event(self, job_id: str, kind: str, data: dict[str, Any]) -> int:
        """Append an event to a job's history; its sequence number."""
        return self._write("INSERT INTO events (job_id, kind, data) VALUES (?, ?, ?)", job_id, kind, _dumps(data))

    def events(self, job_id: str, after: int = 0, kinds: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """A job's events after sequence number ``after``, optionally only those of the given kinds."""
        rows = self._rows("SELECT seq, kind, data FROM events WHERE job_id = ? AND seq > ? ORDER BY seq", job_id, after)
        return self._readable([r for r in rows if kinds is None or r["kind"] in kinds],
                              lambda r: {"seq": r["seq"], "kind": r["kind"], "data": json.loads(r["data"])}, "event")

    def drop_steps(self, job_id: str, fact_index: int) -> None:
        """Forget the events of an earlier check of a fact whose check starts again (after a
        restart, a retry or a re-check): its steps, start and end."""
        self._write("DELETE FROM events WHERE job_id = ? AND kind IN ('step', 'fact_started', 'fact')"
                    " AND json_extract(data, '$.fact') = ?", job_id, fact_index)

    def drop_events(self, job_id: str, kind: str) -> None:
        """Forget a job's events of ``kind`` (the statuses of earlier attempts, before a new one is told)."""
        self._write("DELETE FROM events WHERE job_id = ? AND kind = ?", job_id, kind)

    def version(self, job_id: str) -> tuple[Any, ...]:
        """Changes whenever anything a reader of the job sees changes (an event or a review)."""
        with self._lock:
            seq = self._db.execute("SELECT MAX(seq) FROM events WHERE job_id = ?", (job_id,)).fetchone()[0]
            reviews = self._db.execute("SELECT COUNT(*), MAX(created) FROM reviews WHERE job_id = ?", (job_id,)).fetchone()
        return (seq, *reviews)

    # -- the patrol ------------------------------------------------------------------------
    def position(self, source: str) -> str | None:
        """Where the patrol of ``source`` (an event stream or a recording) stopped reading."""
        rows = self._rows("SELECT position FROM positions WHERE source = ?", source)
        return rows[0]["position"] if rows else None

    def set_position(self, source: str, position: str | None) -> None:
        """Remember where the patrol of ``source`` has read to (after the events' jobs are stored)."""
        self._write("INSERT OR REPLACE INTO positions VALUES (?, ?, ?)", source, position, time.time())

    def move_position(self, old: str, new: str) -> None:
        """Keep the position saved under the name ``old`` under ``new`` instead (unless ``new``
        has one already), and forget ``old``."""
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO positions SELECT ?, position, updated FROM positions WHERE source = ?",
                       _clean((new, old)))
            db.execute("DELETE FROM positions WHERE source = ?", _clean((old,)))

    def patrol_items(self, *, flagged_only: bool = True, limit: int = 200) -> list[dict[str, Any]]:
        """Checked facts of patrolled edits, newest edit first (flagged ones only, by default),
        each with its edit's request and notes, its claim (the block the edit wrote into), its assessment
        and its review."""
        flagged = " AND f.outcome = 'flagged'" if flagged_only else ""
        rows = self._rows(
            "SELECT j.id AS job_id, j.request, j.notes, j.created, f.idx, f.claim_id, f.fact, f.claim, f.score, f.verdict,"
            " f.assessment, r.decision, r.comment, r.created AS reviewed FROM jobs j JOIN facts f ON f.job_id = j.id"
            " LEFT JOIN reviews r ON r.job_id = j.id AND r.claim_id = f.claim_id"
            f" WHERE j.kind = 'patrol' AND f.status = 'done'{flagged} ORDER BY j.created DESC, f.idx LIMIT ?", limit)
        return self._readable(rows, lambda row: {
            **dict(row), "request": json.loads(row["request"]), "notes": json.loads(row["notes"]) if row["notes"] else {},
            "claim": json.loads(row["claim"]), "assessment": json.loads(row["assessment"]) if row["assessment"] else None},
            "patrolled fact")

    def job_times(self, kind: str) -> list[tuple[str, float]]:
        """(id, when it last changed) of every finished job of ``kind``, oldest first."""
        return [(r["id"], r["updated"]) for r in self._rows(
            "SELECT id, updated FROM jobs WHERE kind = ? AND status NOT IN (?, ?) ORDER BY created", kind, *UNFINISHED)]

    def patrol_counts(self) -> dict[str, int]:
        """Patrolled edits by status."""
        return {r["status"]: r["n"] for r in self._rows("SELECT status, COUNT(*) AS n FROM jobs WHERE kind = 'patrol' GROUP BY status")}

    def add_pending_page(self, page_key: str, job_id: str, page: dict[str, Any]) -> None:
        """Remember an edited page's new revision until it is stored in the index (the latest wins)."""
        self._write("INSERT OR REPLACE INTO pending_pages VALUES (?, ?, ?, ?)", page_key, job_id, _dumps(page), time.time())

    def pending_pages(self) -> list[dict[str, Any]]:
        """Edited pages waiting to be stored in the index, oldest first."""
        return self._readable(self._rows("SELECT * FROM pending_pages ORDER BY created"),
                              lambda r: {"page_key": r["page_key"], "job_id": r["job_id"], "page": json.loads(r["page"])},
                              "pending page")

    def drop_pending_pages(self, stored: list[tuple[str, str]]) -> None:
        """Forget pages now stored in the index, given as (page key, job id): a newer revision of the
        page queued meanwhile (another job) stays."""
        with self._transaction() as db:
            db.executemany("DELETE FROM pending_pages WHERE page_key = ? AND job_id = ?", [_clean(tuple(s)) for s in stored])

    # -- reviews ---------------------------------------------------------------------------
    def put_review(self, job_id: str, claim_id: str, fact: str, decision: str, comment: str | None) -> dict[str, Any]:
        """Store an editor's review of a fact, replacing an earlier one; the review as stored."""
        now = time.time()
        self._write("INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?)", job_id, claim_id, fact, decision, comment, now)
        return {"job_id": job_id, "claim_id": claim_id, "fact": fact, "decision": decision, "comment": comment, "created": now}

    def reviews(self, job_id: str | None = None) -> list[dict[str, Any]]:
        """All reviews, or those of one job, oldest first."""
        if job_id is None:
            return [dict(r) for r in self._rows("SELECT * FROM reviews ORDER BY created")]
        return [dict(r) for r in self._rows("SELECT * FROM reviews WHERE job_id = ? ORDER BY created", job_id)]
