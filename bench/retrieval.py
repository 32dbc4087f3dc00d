"""Retrieval benchmarks: store speed at scale, and retrieval quality on WikiCollide.

``run_retrieval_bench`` times the two vector stores on synthetic blocks: the embedded Qdrant
engine at ``n`` blocks, and qdrant-client's local mode (the pure-Python stand-in for a Qdrant
server) as the baseline at a smaller size, with the embedded engine re-run at that size so the
speed-up compares like with like. Dense vectors are random unit vectors, so embedding time is
excluded by design; BM25 vectors are computed from the text inside the timed upserts.

``run_retrieval_quality`` indexes the passages of a WikiCollide file and checks how well each
search mode, queried with a claim (its own article excluded), recovers the passages the
dataset's original agent found for that claim.
"""

from __future__ import annotations

import os
import string
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from qdrant_edge import SparseVector
from rich.table import Table

from claire.indexes.corpus import blocks_from_wikicollide, wikicollide_claims
from claire.domain import Block
from claire.indexes.retriever import Hit, build_index, open_retriever
from claire.indexes.edge_store import EdgeStore
from claire.indexes.index_meta import IndexMeta
from claire.indexes.server_store import ServerStore
from claire.indexes.store import IndexStore, SearchMode

DIM = 384
K = 15
CANDIDATES = 50
UPSERT_BATCH = 256
BASELINE_QUERIES = 50  # qdrant-client local mode scans every point per query

Reranker = Callable[[str, list[Hit]], list[Hit]]


def _vocabulary(rng: np.random.Generator, size: int = 20_000) -> np.ndarray:
    letters = np.array(list(string.ascii_lowercase))
    words = {"".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(size * 2)}
    return np.array(sorted(words)[:size])


def synthetic_blocks(n: int, seed: int = 7) -> tuple[list[Block], np.ndarray]:
    """``n`` blocks of 40-80 random words (Zipf-like frequencies), five to a title, with random
    unit dense vectors."""
    rng = np.random.default_rng(seed)
    vocabulary = _vocabulary(rng)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.05
    lengths = rng.integers(40, 81, n)
    words = rng.choice(vocabulary, lengths.sum(), p=weights / weights.sum())
    titles = [" ".join(rng.choice(vocabulary, 3)).title() for _ in range((n + 4) // 5)]
    ends = np.cumsum(lengths)
    blocks = [
        Block(
            id=f"b{i}",
            document_title=titles[i // 5],
            section_title="",
            content=" ".join(words[end - length : end]),
        )
        for i, (end, length) in enumerate(zip(ends, lengths, strict=True))
    ]
    dense = rng.standard_normal((n, DIM), dtype=np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    return blocks, dense


def _queries(blocks: list[Block], dense: np.ndarray, count: int, seed: int = 11) -> list[tuple[str, np.ndarray, str]]:
    """(text, vector, title to exclude): words and a perturbed vector from a random block, and a
    random other article excluded (as a claim's own article would be)."""
    rng = np.random.default_rng(seed)
    queries = []
    for i in rng.choice(len(blocks), count, replace=False):
        words = blocks[i].content.split()
        text = " ".join(rng.choice(words, min(8, len(words)), replace=False))
        vector = dense[i] + rng.normal(0, 0.05, DIM).astype(np.float32)
        other = blocks[int(rng.integers(len(blocks)))].document_title
        queries.append((text, vector / np.linalg.norm(vector), other))
    return queries


def _percentile_ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(samples, q)) * 1000, 3)


def _sparse_part(texts: list[str]) -> list[tuple[list[int], list[float]]]:
    """BM25 vectors of some texts as (indices, values) (runs in a worker process)."""
    from claire.indexes import sparse

    return [(list(v.indices), list(v.values)) for v in (sparse.document_vector(t) for t in texts)]


def bm25_vectors(blocks: list[Block], workers: int) -> tuple[list[SparseVector], float]:
    """Every block's BM25 vector, computed on ``workers`` processes as a dump build's parsing
    processes do, and the seconds it took."""
    texts = [b.embed_text() for b in blocks]
    chunk = max(1, -(-len(texts) // (workers * 8)))
    started = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        parts = [part for done in pool.map(_sparse_part, [texts[i: i + chunk] for i in range(0, len(texts), chunk)])
                 for part in done]
    vectors = [SparseVector(indices=i, values=v) for i, v in parts]
    return vectors, time.perf_counter() - started


def _measure(store: IndexStore, blocks: list[Block], dense: np.ndarray, bm25: list[SparseVector] | None, queries: list,
             console: Console) -> tuple[dict, dict[str, list[list[str]]]]:
    """Upsert, finalize and query latencies of one store; also the ids each query found (by mode)."""
    store.create(IndexMeta(name="", embedder="synthetic", embedder_model="random-unit-vectors", dim=DIM))
    started = time.perf_counter()
    for start in range(0, len(blocks), UPSERT_BATCH):
        store.upsert(blocks[start : start + UPSERT_BATCH], dense[start : start + UPSERT_BATCH],
                     sparse=bm25[start : start + UPSERT_BATCH] if bm25 is not None else None)
    upsert_s = time.perf_counter() - started
    started = time.perf_counter()
    store.finalize()
    finalize_s = time.perf_counter() - started
    latencies: dict[SearchMode, list[float]] = {"hybrid": [], "dense": [], "bm25": []}
    found: dict[str, list[list[str]]] = {mode: [] for mode in latencies}
    for mode, samples in latencies.items():
        for text, vector, exclude in queries:
            started = time.perf_counter()
            hits = store.search(dense=vector, text=text, exclude_title=exclude, k=K, mode=mode, candidates=CANDIDATES)
            samples.append(time.perf_counter() - started)
            found[mode].append([block.id for block, _ in hits])
    result = {
        "n": len(blocks),
        "documents": store.meta.documents,
        "upsert_s": round(upsert_s, 2),
        "upsert_blocks_per_s": round(len(blocks) / upsert_s),
        "finalize_s": round(finalize_s, 2),
        "size_on_disk_mb": round((store.size_on_disk() or 0) / 2**20, 1),
        "queries": len(queries),
        "hybrid_p50_ms": _percentile_ms(latencies["hybrid"], 50),
        "hybrid_p95_ms": _percentile_ms(latencies["hybrid"], 95),
        "dense_p50_ms": _percentile_ms(latencies["dense"], 50),
        "dense_p95_ms": _percentile_ms(latencies["dense"], 95),
        "bm25_p50_ms": _percentile_ms(latencies["bm25"], 50),
    }
    store.close()
    console.print(
        f"  upsert {result['upsert_blocks_per_s']} blocks/s, finalize {result['finalize_s']} s, "
        f"hybrid p50 {result['hybrid_p50_ms']} ms, p95 {result['hybrid_p95_ms']} ms"
    )
    return result, found


def recall_against(found: list[list[str]], reference: list[list[str]]) -> float:
    """Mean share of the reference's top-k ids that ``found`` also returned (recall@k)."""
    shares = [len(set(a) & set(b)) / len(b) for a, b in zip(found, reference, strict=True) if b]
    return round(float(np.mean(shares)), 4) if shares else 0.0


def _speed_table(runs: dict[str, dict], speedup: dict[str, float]) -> Table:
    table = Table(title=f"Vector stores on synthetic blocks (top-{K}, {CANDIDATES} candidates, title excluded)")
    table.add_column("metric", no_wrap=True)
    for label in runs:
        table.add_column(label, justify="right")
    table.add_column("speed-up (same n)", justify="right")
    for metric in next(iter(runs.values())):
        table.add_row(metric, *(str(run[metric]) for run in runs.values()), str(speedup.get(metric, "")))
    return table


def run_retrieval_bench(
    n: int = 100_000,
    *,
    queries: int = 200,
    baseline_n: int | None = None,
    workdir: Path | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Time the embedded engine at ``n`` blocks and qdrant-client local mode at ``baseline_n``
    (default ``min(n, 20000)``); print a table and return the figures."""
    console = console or Console()
    baseline_n = min(n, 20_000) if baseline_n is None else min(baseline_n, n)  # 0: no baseline
    note = (
        "Synthetic corpus: random words, random unit 384-d dense vectors — embedding time is "
        "excluded (no embedder runs); BM25 vectors are computed beforehand on every core, as a dump build's "
        "parsing processes do. "
        "Latencies exclude query embedding."
    )
    console.print(note)
    started = time.perf_counter()
    console.print(f"generating {n:,} blocks ...")
    blocks, dense = synthetic_blocks(n)
    workers = max(1, os.cpu_count() or 1)
    bm25, bm25_s = bm25_vectors(blocks, workers)
    console.print(f"  generated in {time.perf_counter() - started:.1f} s (BM25 vectors on {workers} process(es): {bm25_s:.1f} s)")
    all_queries = _queries(blocks, dense, min(queries, n))
    with tempfile.TemporaryDirectory(dir=workdir) as scratch:
        runs: dict[str, dict] = {}
        console.print(f"embedded engine (qdrant-edge) at n={n:,}, float vectors ...")
        runs[f"edge n={n}"], float_found = _measure(EdgeStore(Path(scratch) / "edge"), blocks, dense, bm25, all_queries, console)
        console.print(f"embedded engine at n={n:,}, int8 quantized (rescored) ...")
        runs[f"edge int8 n={n}"], int8_found = _measure(EdgeStore(Path(scratch) / "edge-int8", int8=True), blocks, dense,
                                                       bm25, all_queries, console)
        recall = {mode: recall_against(int8_found[mode], float_found[mode]) for mode in ("hybrid", "dense")}
        runs[f"edge int8 n={n}"].update({f"{mode}_recall_vs_float": value for mode, value in recall.items()})
        runs[f"edge n={n}"].update({f"{mode}_recall_vs_float": 1.0 for mode in recall})
        speedup: dict[str, float] = {}
        if baseline_n:
            small_queries = _queries(blocks[:baseline_n], dense[:baseline_n], min(queries, BASELINE_QUERIES, baseline_n))
            console.print(f"embedded engine at n={baseline_n:,} (for the like-for-like ratio) ...")
            edge_small, _ = _measure(EdgeStore(Path(scratch) / "edge-small"), blocks[:baseline_n], dense[:baseline_n],
                                     bm25[:baseline_n], small_queries, console)
            console.print(f"qdrant-client local mode at n={baseline_n:,} (baseline; slow) ...")
            local = ServerStore(path=Path(scratch) / "qdrant-local", collection="bench")
            baseline, _ = _measure(local, blocks[:baseline_n], dense[:baseline_n], bm25[:baseline_n], small_queries, console)
            runs[f"edge n={baseline_n}"], runs[f"qdrant-client local n={baseline_n}"] = edge_small, baseline
            speedup = {
                "upsert_blocks_per_s": round(edge_small["upsert_blocks_per_s"] / baseline["upsert_blocks_per_s"], 1),
                **{metric: round(baseline[metric] / max(edge_small[metric], 1e-3), 1)
                   for metric in ("upsert_s", "hybrid_p50_ms", "hybrid_p95_ms", "dense_p50_ms", "bm25_p50_ms")},
            }
    for run in runs.values():
        run.setdefault("hybrid_recall_vs_float", "")
        run.setdefault("dense_recall_vs_float", "")
    console.print(_speed_table(runs, speedup))
    wall = time.perf_counter() - started
    console.print(f"{note} Whole benchmark: {wall:,.0f} s on {os.cpu_count()} core(s).")
    return {"note": note, "dim": DIM, "k": K, "candidates": CANDIDATES, "runs": runs, "speedup_same_n": speedup,
            "bm25_seconds": round(bm25_s, 2), "wall_seconds": round(wall, 1), "cores": os.cpu_count()}


# --- quality on WikiCollide ----------------------------------------------------------------


def _score(hits: list[Hit], relevant: set[str], k: int) -> tuple[float, float, float]:
    """Recall@k, recall capped at what k slots can hold (found / min(relevant, k)), reciprocal rank."""
    ids = [h.block.id for h in hits[:k]]
    found = len(relevant.intersection(ids))
    first = next((rank for rank, bid in enumerate(ids, start=1) if bid in relevant), None)
    return found / len(relevant), found / min(len(relevant), k), (1.0 / first if first else 0.0)


def run_retrieval_quality(
    dataset: Path,
    *,
    embedder_spec: str = "minilm",
    k: int = K,
    console: Console | None = None,
    reranker: Reranker | None = None,
) -> dict[str, Any]:
    """Recall@k and MRR of dense, BM25 and hybrid search (and hybrid + ``reranker`` when given)
    for WikiCollide claims, over an index of the file's own passages. A claim's relevant blocks
    are those its agent trace found outside the claim's article."""
    console = console or Console()
    claims = wikicollide_claims(dataset)
    blocks = blocks_from_wikicollide(dataset)
    metrics = (f"recall@{k}", f"capped_recall@{k}", "mrr")
    scores: dict[str, list[tuple[float, float, float]]] = {"dense": [], "bm25": [], "hybrid": [], "hybrid+rerank": []}
    with tempfile.TemporaryDirectory() as scratch:
        build_index(blocks, name="quality", embedder=embedder_spec, root=Path(scratch), show_progress=False)
        with open_retriever("quality", root=Path(scratch)) as retriever:
            for claim in claims:
                own = claim.context.document_title
                relevant = {b.id for b in claim.found if b.document_title != own}
                if not relevant:
                    continue
                for mode in ("dense", "bm25", "hybrid"):
                    hits = retriever.search(
                        claim.claim_text, exclude_title=own, k=k, mode=mode, candidates=max(CANDIDATES, k)
                    )
                    scores[mode].append(_score(hits, relevant, k))
                if reranker is not None:
                    pool = retriever.search(claim.claim_text, exclude_title=own, k=CANDIDATES, candidates=CANDIDATES)
                    scores["hybrid+rerank"].append(_score(reranker(claim.claim_text, pool), relevant, k))
    results: dict[str, dict[str, float] | None] = {
        mode: dict(zip(metrics, (round(float(v), 3) for v in np.mean(rows, axis=0)), strict=True)) if rows else None
        for mode, rows in scores.items()
    }
    scored = len(scores["hybrid"])
    table = Table(
        title=f"Retrieval quality on {Path(dataset).name}: {scored} claims, {len(blocks)} blocks, {embedder_spec}"
    )
    table.add_column("mode", no_wrap=True)
    for metric in metrics:
        table.add_column(metric, justify="right")
    for mode, figures in results.items():
        if figures is None:
            table.add_row(mode, "skipped (no reranker)", "", "")
        else:
            table.add_row(mode, *(f"{figures[m]:.3f}" for m in metrics))
    console.print(table)
    console.print(
        "Relevant = passages the dataset's agent retrieved for the claim (outside its article); "
        f"capped recall divides by min(relevant, {k}). The index holds only the file's passages, "
        "so this measures ranking within that pool."
    )
    return {
        "dataset": str(dataset),
        "embedder": embedder_spec,
        "claims": scored,
        "blocks": len(blocks),
        "k": k,
        "modes": results,
    }
