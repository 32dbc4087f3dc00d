"""A persistent LangChain cache of chat answers in SQLite (WAL mode), one per endpoint.

LangChain asks a chat model's ``cache`` with the serialised prompt and a string of everything else
that shapes the answer (model, sampling parameters, bound tools, per-call options such as the
prompt's name header when a test sends it); :class:`SQLiteChatCache` keys an answer by a hash of those two and of the
endpoint it came from, so the same model name on two servers never shares answers. An empty
answer (no text, no tool call) is never stored: it is retried, not remembered. An answer served
from the cache carries ``response_metadata["claire_cache_hit"]``, which usage accounting reads.
A stored row that cannot be read back as an answer (damaged on disk, or written by another
version) is a miss: the model is asked again and the fresh answer replaces the row.

WAL lets concurrent readers and writers (threads or processes) share one file and a reader never
waits for a writer: lookups run on the caller's thread over a connection of their own (a fraction
of a millisecond), writes go to one thread of the cache's own and the caller does not wait for
them. Each write commits on its own, so a crash loses at most the answers not yet written;
``close`` waits for the queued writes.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import orjson
from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import AIMessage, message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, Generation

from claire.errors import ConfigError
from claire.files import valid_text
from claire.usage import CACHE_HIT

log = logging.getLogger(__name__)


def cache_key(endpoint: str, prompt: str, llm_string: str) -> str:
    """SHA-256 of the endpoint, the serialised prompt and the model settings."""
    digest = hashlib.sha256()
    for part in (endpoint, llm_string, prompt):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _storable(generations: Sequence[Generation]) -> bool:
    """Whether an answer is worth keeping: it has text or a tool call."""
    for generation in generations:
        message = getattr(generation, "message", None)
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            return True
        if (generation.text or "").strip():
            return True
    return False


def _encode(generations: Sequence[Generation]) -> bytes:
    records = []
    for generation in generations:
        message = getattr(generation, "message", None)
        if message is None:
            message = AIMessage(content=generation.text)
        records.append({"message": message_to_dict(message), "info": generation.generation_info})
    try:
        return orjson.dumps(records)
    except TypeError:  # half a surrogate pair in the answer: kept with U+FFFD in its place
        return orjson.dumps(valid_text(records))


def _decode(data: str | bytes) -> list[Generation] | None:
    """The answer a row holds, or None when the row is not one (bad JSON, another shape)."""
    try:
        generations: list[Generation] = []
        for record in orjson.loads(data):
            message = messages_from_dict([record["message"]])[0]
            if not isinstance(message, AIMessage):
                return None
            message.response_metadata = {**(message.response_metadata or {}), CACHE_HIT: True}
            generations.append(ChatGeneration(message=message, generation_info=record.get("info")))
    except Exception:  # whatever a damaged row makes the readers raise: it is no answer
        return None
    return generations if _storable(generations) else None  # an empty answer is never stored: not one either


class SQLiteChatCache(BaseCache):
    """LangChain's cache interface over one SQLite file; ``refresh`` ignores stored answers and
    stores fresh ones."""

    def __init__(self, path: Path, *, endpoint: str, refresh: bool = False):
        self.path = Path(path)
        self.endpoint = endpoint
        self.refresh = refresh
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers ("
                " key TEXT PRIMARY KEY, answer BLOB NOT NULL, created REAL NOT NULL)"
            )
            self._reader = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        except sqlite3.Error as error:
            raise ConfigError(f"cannot open the LLM cache at {self.path}: {error} (set llm.cache_path or --no-cache)") from None
        self._lock = threading.Lock()  # the writing connection
        self._read_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claire-llm-cache")
        self._unwritten: dict[str, bytes] = {}  # queued answers, readable before they land
        self._queue_lock = threading.Lock()  # _unwritten is changed by the caller and by the writer thread
        self._write_failed = False
        self._broken_said = False
        self._closed = False

    # -- LangChain's interface --------------------------------------------------------------
    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The stored answer for this prompt and model settings, or None."""
        if self.refresh or self._closed:
            return None
        key = cache_key(self.endpoint, prompt, llm_string)
        data = self._unwritten.get(key)
        if data is None:
            with self._read_lock:
                row = self._reader.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            data = row[0] if row else None
        if data is None:
            return None
        generations = _decode(data)
        if generations is None:  # a broken row is a miss: the fresh answer overwrites it
            self._say_broken()
        return generations

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Queue the answer for writing (returns at once); empty answers are not kept."""
        if self._closed or not _storable(return_val):
            return
        key = cache_key(self.endpoint, prompt, llm_string)
        data = _encode(return_val)
        with self._queue_lock:
            self._unwritten[key] = data
        self._writer.submit(self._write, key, data).add_done_callback(lambda future: self._written(key, data, future))

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """:meth:`lookup`, inline: cheaper than a hop to a thread."""
        return self.lookup(prompt, llm_string)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """:meth:`update`, inline (the write itself happens on the cache's thread)."""
        self.update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        """Forget every stored answer."""
        with self._lock:
            self._db.execute("DELETE FROM answers")

    # -- housekeeping ------------------------------------------------------------------------
    def _say_broken(self) -> None:
        if not self._broken_said:  # said once: every broken row is asked again all the same
            self._broken_said = True
            log.warning("the LLM cache %s holds an answer it cannot read; asking the model again and replacing it",
                        self.path)

    def _write(self, key: str, data: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers (key, answer, created) VALUES (?, ?, ?)",
                             (key, data, time.time()))

    def _written(self, key: str, data: bytes, future: Future[None]) -> None:
        with self._queue_lock:  # a newer answer queued for the same key stays until it is written
            if self._unwritten.get(key) is data:
                del self._unwritten[key]
        error = future.exception()
        if error is not None and not self._write_failed:  # said once: the run goes on without caching
            self._write_failed = True
            log.warning("cannot write to the LLM cache %s: %s", self.path, error)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        """Wait for the queued writes, then close the database."""
        if self._closed:
            return
        self._closed = True
        self._writer.shutdown(wait=True)
        with self._lock:
            self._db.close()
        with self._read_lock:
            self._reader.close()
