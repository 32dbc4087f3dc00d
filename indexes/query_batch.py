"""Micro-batching of query embeddings for concurrent searches.

Many claims in flight each embed one search query. Encoded one at a time behind a lock they
queue up; encoded together (or side by side) they wait less. :class:`QueryBatcher` lets the first
caller encode; callers that arrive meanwhile wait, and when a lane is free, one of them encodes
everything that gathered in one batch, and so on — no timer, so a lone query is never delayed,
and no caller encodes more than one batch (a leader returns with its own vector, not after
everyone's). ``lanes`` encodes may run at once, for encoders that run well side by side on
several cores (ONNX Runtime with one thread a call) rather than gaining from batches.
Identical queries in flight share one encode, and recent vectors are cached (sweeps repeat queries).
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
                 cache_size: int = 4096, lanes: int = 1) -> None:
        self._encode_many = encode_many
        self._max_batch = max_batch
        self._lanes = max(1, lanes)
        self._cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._inflight: dict[str, Future[np.ndarray]] = {}  # being encoded now
        self._turn = threading.Condition()  # guards all of the above; notified when a batch ends
        self._encoding = 0  # encodes running now (at most ``lanes``)
        self.batches = 0  # encode calls made (for tests and benchmarks)

    def vector(self, query: str) -> np.ndarray:
        """The query vector of ``text``, encoded together with the queries waiting at the same time."""
        with self._turn:
            cached = self._cache.get(query)
            if cached is not None:
                self._cache.move_to_end(query)
                return cached
            future = self._pending.get(query) or self._inflight.get(query)
            if future is None:
                future = self._pending[query] = Future()
        while (batch := self._next_batch(future)) is not None:
            self._encode(batch)
        return future.result()

    def _next_batch(self, future: Future[np.ndarray]) -> dict[str, Future[np.ndarray]] | None:
        """Wait until ``future`` is resolved (None) or this caller may encode the next batch (it)."""
        with self._turn:
            while not future.done():
                if self._encoding < self._lanes and self._pending:
                    self._encoding += 1
                    queries = list(self._pending)[: self._max_batch]
                    batch = {q: self._pending.pop(q) for q in queries}
                    self._inflight.update(batch)
                    return batch
                self._turn.wait()
            return None

    def _encode(self, batch: dict[str, Future[np.ndarray]]) -> None:
        queries = list(batch)
        error: BaseException | None = None
        try:
            vectors = self._encode_many(queries)
            if len(vectors) != len(queries):
                raise RuntimeError(f"the query encoder returned {len(vectors)} vectors for {len(queries)} queries")
        except BaseException as failure:  # every waiter of the batch gets the error, none hangs
            error = failure
        with self._turn:
            try:
                if error is None:
                    self.batches += 1
                    for query, vector in zip(queries, vectors, strict=True):
                        self._cache[query] = vector
                        batch[query].set_result(vector)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
                else:
                    for query in queries:
                        batch[query].set_exception(error)
            finally:  # whatever happened, the lane is freed and the waiters wake
                for query in queries:
                    self._inflight.pop(query, None)
                self._encoding -= 1
                self._turn.notify_all()
