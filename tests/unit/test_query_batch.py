"""Query micro-batching: concurrent searches share encodes and get the same answers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from claire.indexes.query_batch import QueryBatcher


def slow_encoder(calls: list[list[str]]):
    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        if "boom" in texts:
            raise RuntimeError("encoder failed")
        return np.array([[float(len(t)), float(sum(map(ord, t)))] for t in texts])

    return encode


def test_an_encoder_returning_too_few_vectors_fails_its_waiters_not_the_batcher():
    def short(texts: list[str]) -> np.ndarray:
        return np.zeros((max(len(texts) - 1, 0), 2)) if "bad" in texts else np.ones((len(texts), 2))

    batcher = QueryBatcher(short)
    with pytest.raises(RuntimeError, match="1 vectors for 2 queries|0 vectors for 1 queries"):
        batcher.vector("bad")
    assert batcher.vector("good").tolist() == [1.0, 1.0]  # the lane was freed


def test_an_encoder_error_reaches_every_waiter_and_the_batcher_recovers():
    calls: list[list[str]] = []
    batcher = QueryBatcher(slow_encoder(calls))
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(batcher.vector, q) for q in ("boom", "a", "b", "c")]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result(timeout=10))
            except RuntimeError as error:
                outcomes.append(str(error))
    assert outcomes[0] == "encoder failed"
    assert batcher.vector("fine").tolist() == [4.0, float(sum(map(ord, "fine")))]


