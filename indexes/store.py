"""The interface every store of corpus blocks offers (:class:`IndexStore`) and the schema both
backends share: a named dense vector ``dense`` (cosine), a sparse vector ``bm25`` whose IDF the
engine applies, the block as payload and a keyword index on ``document_title``. Queries are
dense, BM25, or both fused with reciprocal rank fusion in one request, always able to exclude one
article by title. The embedded engine is in ``edge_store``, a Qdrant server in ``server_store``.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import qdrant_edge as edge

from claire.errors import RetrievalError
from claire.indexes import sparse as bm25
from claire.domain import Block
from claire.indexes.index_meta import IndexMeta, point_id

SearchMode = Literal["hybrid", "dense", "bm25"]

DENSE = "dense"
BM25 = "bm25"
TITLE = "document_title"
TIE_MARGIN = 10
RRF_K = 60
BATCH = 512
ORDER = "corpus_order"
"""A payload field: where the block stood in what was stored (a corpus file's order), so an
article's blocks can be read back in reading order."""


class IndexStore(ABC):
    """One index of corpus blocks. Create it (``create`` → ``upsert``… → ``finalize``) or open an
    existing one, then ``search``. Not safe for concurrent use: callers serialise access."""

    _meta: IndexMeta | None = None
    _build_started: float | None = None
    _stored = 0  # blocks stored by this handle, so each payload records its place in the corpus (ORDER)

    @property
    def exists(self) -> bool:
        """Whether the index exists (opened, or created)."""
        return self._meta is not None

    @property
    def meta(self) -> IndexMeta:
        """The index's description."""
        if self._meta is None:
            raise RetrievalError("this index has not been created yet")
        return self._meta

    def create(self, meta: IndexMeta) -> None:
        """Create the empty index described by ``meta`` (its name and backend are set here)."""
        if self._meta is not None:
            raise RetrievalError(f"index {self._meta.name} already exists")
        self._create(meta)
        self._meta = meta
        self._build_started = time.monotonic()
        self._save_meta()

    def upsert(self, blocks: list[Block], dense: np.ndarray, *, sparse: list[Any] | None = None) -> None:
        """Store blocks with their dense vectors (one row each) and BM25 vectors (computed here when
        ``sparse`` does not bring them, as a build's parsing processes do)."""
        meta = self.meta
        if dense.shape != (len(blocks), meta.dim):
            raise RetrievalError(
                f"got {dense.shape[0]}x{dense.shape[1] if dense.ndim > 1 else '?'} vectors for "
                f"{len(blocks)} blocks; index {meta.name} needs {meta.dim}-dimensional vectors"
            )
        for start in range(0, len(blocks), BATCH):
            batch = blocks[start : start + BATCH]
            self._upsert(
                [point_id(b.id) for b in batch],
                dense[start : start + BATCH].astype(np.float32).tolist(),
                sparse[start : start + BATCH] if sparse is not None
                else [bm25.document_vector(b.embed_text()) for b in batch],
                [{**b.model_dump(exclude_none=True), ORDER: self._stored + start + i} for i, b in enumerate(batch)],
            )
        self._stored += len(blocks)

    def blocks_of(self, title: str) -> list[Block]:
        """Every block of the article ``title``, in reading order: the order they were stored in
        (a corpus file's order), then their ids' order (a dump's ``PAGE-N``)."""
        payloads = self._title_payloads(title)
        def key(payload: dict) -> tuple:
            parts = re.split(r"(\d+)", str(payload.get("id", "")))
            return (payload.get(ORDER, 1 << 62), [int(p) if p.isdigit() else p for p in parts])
        return [Block.model_validate(p) for p in sorted(payloads, key=key)]

    def delete(self, block_ids: list[str]) -> None:
        """Remove the blocks with these ids (ids not stored are ignored)."""
        if block_ids:
            self._delete([point_id(b) for b in block_ids])

    def flush(self) -> None:
        """Make the writes so far durable (a no-op where every write already is)."""

    def iter_blocks(self, batch: int = 1000) -> Iterator[Block]:
        """Every stored block, in no particular order."""
        offset = None
        while True:
            payloads, offset = self._scroll(batch, offset)
            yield from (Block.model_validate(p) for p in payloads)
            if offset is None:
                return

    def finalize(self) -> None:
        """Build the search structures, record the corpus statistics and mark the index complete."""
        meta = self.meta
        self._optimize()
        meta.blocks = self.count()
        meta.documents = self._distinct_titles(meta.blocks)
        if self._build_started is not None:
            meta.build_seconds = round(time.monotonic() - self._build_started, 3)
        meta.complete = True
        self._save_meta()

    def search(
        self,
        *,
        dense: np.ndarray | None,
        text: str | None,
        exclude_title: str | None,
        k: int,
        mode: SearchMode = "hybrid",
        candidates: int = 50,
    ) -> list[tuple[Block, float]]:
        """The ``k`` best blocks, best first, never from the article titled ``exclude_title``.

        ``hybrid`` fuses the dense and BM25 rankings (each ``candidates`` deep) with RRF, so it
        needs both ``dense`` and ``text``; ``dense`` and ``bm25`` use one of them.
        """
        if k < 1:
            raise RetrievalError(f"k must be at least 1 (got {k})")
        if mode not in ("hybrid", "dense", "bm25"):
            raise RetrievalError(f"unknown search mode {mode!r}; use hybrid, dense or bm25")
        vector = None
        if mode in ("hybrid", "dense"):
            if dense is None or np.shape(dense) != (self.meta.dim,):
                raise RetrievalError(f"{mode} search needs a {self.meta.dim}-dimensional query vector")
            vector = np.asarray(dense, dtype=np.float32).tolist()
        terms = None
        if mode in ("hybrid", "bm25"):
            if text is None:
                raise RetrievalError(f"{mode} search needs the query text")
            terms = bm25.query_vector(text)
            if not terms.indices:
                terms = None  # only stop words: nothing for BM25 to match
                if mode == "bm25":
                    return []
        # Fused scores tie exactly (RRF), and the engine orders ties arbitrarily: fetch a margin,
        # order by (score, id) and cut, so the same query always gives the same ranking.
        found = self._query(vector, terms, exclude_title, k + TIE_MARGIN, max(candidates, k + TIE_MARGIN))
        ranked = sorted(((Block.model_validate(payload), score) for payload, score in found),
                        key=lambda pair: (-round(pair[1], 9), pair[0].id))
        return ranked[:k]

    def iter_points(self, fields: list[str] | None = None, batch: int = 1024) -> Iterator[tuple[int, dict]]:
        """Every stored point as ``(point id, payload)``, in the engine's order; the payload holds
        only ``fields`` (nothing when ``[]``, everything when None). For sampling and audits."""
        raise RetrievalError(f"the {type(self).__name__} backend cannot list its blocks")

    def fetch(self, ids: list[int]) -> list[dict]:
        """The payloads of the points ``ids`` (in that order; ids not stored are left out)."""
        raise RetrievalError(f"the {type(self).__name__} backend cannot fetch blocks by id")

    def refresh(self, accept: Callable[[IndexMeta], bool] | None = None) -> bool:
        """Move to the index's newest complete version if a build replaced it since it was opened
        (and ``accept`` approves its description); True when it moved. Servers are always current."""
        return False

    @abstractmethod
    def count(self) -> int:
        """The number of blocks stored."""

    @abstractmethod
    def count_title(self, title: str) -> int:
        """The number of blocks of the article ``title``."""

    @abstractmethod
    def _title_payloads(self, title: str) -> list[dict]:
        """The payloads of every block of the article ``title`` (a filtered read, no search)."""

    @abstractmethod
    def close(self) -> None:
        """Release the index (idempotent)."""

    @abstractmethod
    def size_on_disk(self) -> int | None:
        """Bytes used on local disk, or None when the data lives on a server."""

    @abstractmethod
    def _create(self, meta: IndexMeta) -> None: ...

    @abstractmethod
    def _save_meta(self) -> None: ...

    @abstractmethod
    def _upsert(
        self, ids: list[int], dense: list[list[float]], bm25: list[edge.SparseVector], payloads: list[dict]
    ) -> None: ...

    @abstractmethod
    def _optimize(self) -> None: ...

    @abstractmethod
    def _delete(self, ids: list[int]) -> None: ...

    @abstractmethod
    def _scroll(self, limit: int, offset: Any) -> tuple[list[dict], Any]: ...

    @abstractmethod
    def _distinct_titles(self, limit: int) -> int: ...

    @abstractmethod
    def _query(
        self,
        dense: list[float] | None,
        bm25: edge.SparseVector | None,
        exclude_title: str | None,
        k: int,
        candidates: int,
    ) -> list[tuple[dict, float]]: ...

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tree_size(path: Path) -> int:
    """Bytes allocated on disk under ``path`` (the engine preallocates sparse files, so their
    apparent size overstates the space used)."""
    total = 0
    for file in path.rglob("*"):
        if file.is_file():
            stat = file.stat()
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total
