"""A persistent LLM response cache in SQLite (WAL mode).

Keyed by a hash of everything that shapes an answer: provider, model, messages, tools, tool
choice and sampling parameters. WAL lets concurrent readers and writers (threads or processes)
share one file, and a reader never waits for a writer: lookups run on the caller's thread over a
connection of their own (a fraction of a millisecond, less than handing them to a thread), while
writes go to one thread of the cache's own and the caller does not wait for them. Each write
commits on its own, so a crash loses at most the answers not yet written; ``close`` waits for
the queued writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from claire.errors import ConfigError

log = logging.getLogger(__name__)


def cache_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request as compact JSON with sorted keys, written by orjson for speed (what
    it refuses, such as non-text keys, goes through ``json``). Its text equals ``json``'s except for
    a few float spellings (``0.00001`` for ``1e-05``), so keys made before it differ only for such
    sampling values, and those requests are asked again once."""
    try:
        canonical = orjson.dumps(request, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest()


class ResponseCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._reader = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        except sqlite3.Error as error:
            raise ConfigError(f"cannot open the LLM cache at {self.path}: {error} (set llm.cache_path or --no-cache)") from None
        self._lock = threading.Lock()  # the writing connection
        self._read_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claire-llm-cache")
        self._unwritten: dict[str, dict[str, Any]] = {}  # queued answers, readable before they land
        self._queue_lock = threading.Lock()  # _unwritten is changed by the caller and by the writer thread
        self._write_failed = False

    def get_sync(self, key: str) -> dict[str, Any] | None:
        queued = self._unwritten.get(key)
        if queued is not None:
            return queued
        with self._read_lock:
            row = self._reader.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def put_sync(self, key: str, model: str, response: dict[str, Any]) -> None:
        payload = orjson.dumps(response).decode("utf-8")
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) VALUES (?, ?, ?, ?)",
                (key, model, payload, time.time()),
            )

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.get_sync(key)

    async def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Queue the answer for writing; returns at once."""
        with self._queue_lock:
            self._unwritten[key] = response
        self._writer.submit(self.put_sync, key, model, response).add_done_callback(
            lambda future: self._written(key, response, future))

    def _written(self, key: str, response: dict[str, Any], future: Future[None]) -> None:
        with self._queue_lock:  # a newer answer queued for the same key stays until it is written
            if self._unwritten.get(key) is response:
                del self._unwritten[key]
        error = future.exception()
        if error is not None and not self._write_failed:  # said once: the run goes on without caching
            self._write_failed = True
            log.warning("cannot write to the LLM cache %s: %s", self.path, error)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._writer.shutdown(wait=True)  # the queued writes land first
        with self._lock:
            self._db.close()
        with self._read_lock:
            self._reader.close()
