"""Micro-batching of query embeddings for concurrent searches.

Many claims in flight each embed one search query. Encoded one at a time behind a lock they
queue up; encoded together they cost little more than one. :class:`QueryBatcher` lets the first
caller encode; callers that arrive meanwhile wait, and when the encode returns, everything that
gathered is encoded in one batch — no timer, so a lone query is never delayed. Identical queries
in flight share one encode, and recent vectors are cached (sweeps repeat queries).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np


class QueryBatcher:
    """Thread-safe ``vector(query)`` over ``encode_many(queries) -> (n, dim) array``."""

    def __init__(self, encode_many: Callable[[list[str]], np.ndarray], *, max_batch: int = 64,
                 cache_size: int = 4096) -> None:
        self._encode_many = encode_many
        self._max_batch = max_batch
        self._cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._inflight: dict[str, Future[np.ndarray]] = {}  # being encoded now
        self._lock = threading.Lock()
        self._encoding = False
        self.batches = 0  # encode calls made (for tests and benchmarks)

    def vector(self, query: str) -> np.ndarray:
        with self._lock:
            cached = self._cache.get(query)
            if cached is not None:
                self._cache.move_to_end(query)
                return cached
            future = self._pending.get(query) or self._inflight.get(query)
            if future is None:
                future = self._pending[query] = Future()
            lead = not self._encoding
            self._encoding = self._encoding or lead
        if lead:
            self._drain()
        return future.result()

    def _drain(self) -> None:
        """Encode what is pending, batch after batch, until nothing is left."""
        while True:
            with self._lock:
                if not self._pending:
                    self._encoding = False
                    return
                queries = list(self._pending)[: self._max_batch]
                batch = {q: self._pending.pop(q) for q in queries}
                self._inflight.update(batch)
            try:
                vectors = self._encode_many(queries)
            except BaseException as error:  # every waiter gets the error, none hangs
                with self._lock:
                    for query in queries:
                        self._inflight.pop(query, None)
                for future in batch.values():
                    future.set_exception(error)
                continue
            with self._lock:
                self.batches += 1
                for query, vector in zip(queries, vectors, strict=True):
                    self._cache[query] = vector
                    self._inflight.pop(query, None)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            for query, vector in zip(queries, vectors, strict=True):
                batch[query].set_result(vector)
