"""Query micro-batching: concurrent searches share encodes and get the same answers."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from claire.indexes.query_batch import QueryBatcher
from claire.indexes.retriever import build_index, open_retriever
from claire.testing.doubles import BLOCKS


def slow_encoder(calls: list[list[str]], delay: float = 0.05):
    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        time.sleep(delay)
        if "boom" in texts:
            raise RuntimeError("encoder failed")
        return np.array([[float(len(t)), float(sum(map(ord, t)))] for t in texts])

    return encode


def all_at_once(batcher: QueryBatcher, queries: list[str]) -> list[np.ndarray]:
    """Every query asked from a thread of its own, all released together."""
    start = threading.Barrier(len(queries))

    def ask(q: str) -> np.ndarray:
        start.wait()
        return batcher.vector(q)

    with ThreadPoolExecutor(len(queries)) as pool:
        return list(pool.map(ask, queries))


def test_concurrent_queries_are_encoded_in_few_batches():
    calls: list[list[str]] = []
    batcher = QueryBatcher(slow_encoder(calls))
    queries = [f"query number {i}" for i in range(16)] * 2  # each twice, at once
    vectors = all_at_once(batcher, queries)
    for query, vector in zip(queries, vectors):
        assert vector.tolist() == [float(len(query)), float(sum(map(ord, query)))]
    encoded = [q for call in calls for q in call]
    assert sorted(encoded) == sorted(set(queries))  # identical queries in flight share one encode
    assert len(calls) <= 4 and batcher.batches == len(calls)
    assert batcher.vector("query number 3").tolist() == vectors[3].tolist() and len(calls) == batcher.batches  # cached


def test_lanes_bound_how_many_encodes_run_at_once():
    running, most = [0], [0]
    guard = threading.Lock()

    def encode(texts: list[str]) -> np.ndarray:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with guard:
            running[0] -= 1
        return np.array([[float(len(t))] for t in texts])

    batcher = QueryBatcher(encode, max_batch=1, lanes=2)
    queries = [f"q{i}" for i in range(8)]
    vectors = all_at_once(batcher, queries)
    assert [v.tolist() for v in vectors] == [[float(len(q))] for q in queries]
    assert most[0] == 2 and batcher.batches == len(queries)  # two side by side, never three


def test_concurrent_searches_on_a_real_index_match_sequential_ones(tmp_path):
    build_index(BLOCKS, name="tiny", embedder="minilm", root=tmp_path, show_progress=False)
    queries = ["When was the Eiffel Tower finished?", "Paris landmarks", "world fair 1889", "Texas", "iron lattice"] * 3
    with open_retriever("tiny", root=tmp_path, query_runtime="torch") as retriever:  # PyTorch encodes in batches
        with ThreadPoolExecutor(len(queries)) as pool:
            together = list(pool.map(lambda q: [(h.block.id, round(h.score, 6)) for h in retriever.search(q, k=3)], queries))
    with open_retriever("tiny", root=tmp_path, query_runtime="torch") as retriever:
        alone = [[(h.block.id, round(h.score, 6)) for h in retriever.search(q, k=3)] for q in queries]
    assert together == alone  # how queries are grouped into batches is covered by the QueryBatcher tests above


def test_onnx_queries_go_one_at_a_time_and_match(tmp_path):
    build_index(BLOCKS, name="tiny", embedder="minilm", root=tmp_path, show_progress=False)
    queries = ["When was the Eiffel Tower finished?", "Paris landmarks", "world fair 1889", "Texas"] * 4
    with open_retriever("tiny", root=tmp_path, query_runtime="onnx") as retriever:
        with ThreadPoolExecutor(len(queries)) as pool:
            together = list(pool.map(lambda q: [h.block.id for h in retriever.search(q, k=3)], queries))
        assert retriever._queries.batches == len(set(queries))  # each query encoded once, alone
    with open_retriever("tiny", root=tmp_path, query_runtime="torch") as retriever:
        assert together == [[h.block.id for h in retriever.search(q, k=3)] for q in queries]
