"""A persistent LLM response cache in SQLite (WAL mode).

Keyed by a hash of everything that shapes an answer: provider, model, messages, tools, tool
choice and sampling parameters. Each write commits on its own, so a crash loses at most the call
in flight; WAL lets concurrent readers and writers (threads or processes) share one file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from claire.errors import ConfigError


def cache_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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
        except sqlite3.Error as error:
            raise ConfigError(f"cannot open the LLM cache at {self.path}: {error} (set llm.cache_path or --no-cache)") from None
        self._lock = threading.Lock()
        # One thread of its own: lookups take well under a millisecond and must not wait behind
        # slower work (searches) in the event loop's shared executor.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claire-llm-cache")

    def get_sync(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_sync(self, key: str, model: str, response: dict[str, Any]) -> None:
        payload = json.dumps(response, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) VALUES (?, ?, ?, ?)",
                (key, model, payload, time.time()),
            )

    async def get(self, key: str) -> dict[str, Any] | None:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self.get_sync, key)

    async def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self.put_sync, key, model, response)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        with self._lock:
            self._db.close()
