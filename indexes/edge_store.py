"""Indexes in Qdrant's engine run in-process (``qdrant-edge-py``): :class:`EdgeStore`, an index
as a directory ``<root>/<name>/`` holding complete versions of the shard and a description
naming the current one, so many processes read while one builds (see :mod:`.sharing`); and
:class:`WorkingEdgeStore`, a private working copy for long resumable jobs that is published as a
new version when done.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import qdrant_edge as edge

from claire.errors import RetrievalError
from claire.indexes import sharing
from claire.indexes.index_meta import IndexMeta, read_meta_file
from claire.indexes.store import BM25, DENSE, RRF_K, TITLE, IndexStore, tree_size


def load_shard(path: Path, name: str) -> edge.EdgeShard:
    """Open an engine shard (a clear error when another process holds it)."""
    try:
        return edge.EdgeShard.load(str(path))
    except Exception as exc:  # qdrant-edge raises a bare Exception for every failure
        if "WouldBlock" in str(exc):  # the write-ahead log is locked by another open
            raise RetrievalError(
                f"index {name} is in use by another process (or already open in this one); "
                "close it first or wait for it to finish"
            ) from None
        raise RetrievalError(f"cannot open index {name} at {path}: {exc}") from None


def shard_config(dim: int, *, wal: bool = False, int8: bool = False) -> edge.EdgeConfig:
    """A new shard's layout: a cosine dense vector of ``dim`` and an IDF-weighted BM25 sparse
    vector; the HNSW graph is built on every core (``max_indexing_threads``); without a write-ahead
    log when the build is published only after its final flush; with ``int8``, an int8 copy of the
    dense vectors in RAM (scalar quantization, a quarter of the floats' size)."""
    hnsw = edge.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000,
                                max_indexing_threads=os.cpu_count() or 1)
    return edge.EdgeConfig(
        vectors={DENSE: edge.EdgeVectorParams(size=dim, distance=edge.Distance.Cosine)},
        sparse_vectors={BM25: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
        hnsw_config=hnsw, wal_enabled=wal,
        quantization_config=edge.ScalarQuantizationConfig(type=edge.ScalarType.Int8, quantile=0.99, always_ram=True)
        if int8 else None,
    )


def hnsw_params(limit: int, *, int8: bool = False) -> edge.SearchParams:
    """HNSW beam width for a dense search of ``limit`` results: about 2.5x the results, at least 128.
    (The engine's default searched wider: ~1.5x slower at the same top-50 on 20k random vectors.)
    An int8 index searches its quantized vectors and rescores twice the results with the floats."""
    quantization = edge.QuantizationSearchParams(rescore=True, oversampling=2.0) if int8 else None
    return edge.SearchParams(hnsw_ef=max(128, 5 * limit // 2), quantization=quantization)


class EdgeStore(IndexStore):
    """An index in the embedded Qdrant engine, in the directory ``path`` (``<root>/<name>``).

    Opens the index there if it exists — a private view of its current version, so any number
    of processes can search it while one builds the next version (see :mod:`.sharing`) — unless
    ``open_existing`` is False. ``create`` takes the folder's writer lock (waiting up to
    ``lock_timeout`` s for another writer) and builds a new version, which ``finalize`` makes
    current; with ``replace`` an existing index is replaced that way, else it is an error.
    Closing an unfinished build discards it.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        open_existing: bool = True,
        replace: bool = False,
        lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
        int8: bool = False,
    ) -> None:
        self.path = Path(path)
        self.replace, self.lock_timeout = replace, lock_timeout
        self.int8 = int8  # a new index keeps int8 copies of its dense vectors
        self._shard: edge.EdgeShard | None = None
        self._view: sharing.ReaderView | None = None
        self._writer: sharing.WriterLock | None = None
        self._version: Path | None = None  # the version this store builds
        self._published = False
        if open_existing and (self.path / sharing.POINTER).is_file():
            self._view = sharing.ReaderView.open(self.path)
            if self._view is not None:
                try:
                    self._meta = IndexMeta.from_dict(self._view.description, str(self.path / sharing.POINTER))
                    if self._meta.complete:  # (only folders from before versions can hold an unfinished one)
                        self._shard = load_shard(self._view.shard, self._meta.name)
                except BaseException:
                    self._view.close()
                    raise
                if self._shard is None:
                    self._view.close()
                    self._view = None

    def _create(self, meta: IndexMeta) -> None:
        name = self.path.name
        if self.path.is_dir() and any(not e.name.startswith(".") and e.name not in (sharing.POINTER, sharing.LEGACY_SHARD)
                                      for e in self.path.iterdir()):
            raise RetrievalError(f"{self.path} exists but is not a CLAIRE index; remove it or choose another name")
        writer = sharing.WriterLock(self.path, name, self.lock_timeout).acquire()
        try:
            current = sharing.read_pointer(self.path)
            if current is not None and not self.replace:
                raise RetrievalError(f"index {name} already exists in {self.path.parent}; delete it or rebuild with --replace")
            sharing.prune(self.path, keep=(current or {}).get("version"))  # leftovers of killed builds
            self._version = sharing.new_version(self.path)
            meta.name, meta.backend = name, "edge"
            meta.int8 = self.int8
            self._shard = edge.EdgeShard.create(str(self._version / "shard"), shard_config(meta.dim, int8=self.int8))
            self._shard.update(edge.UpdateOperation.create_field_index(TITLE, edge.PayloadSchemaType.Keyword))
        except BaseException:
            if self._version is not None:
                shutil.rmtree(self._version, ignore_errors=True)
                self._version = None
            sharing.remove_if_unused(self.path)
            writer.release()
            raise
        self._writer = writer

    def _save_meta(self) -> None:
        if self._version is None:
            raise RetrievalError(f"index {self.meta.name} is open for reading; build a new one to change it")
        sharing.write_json_atomically(self._version / "meta.json", self.meta.to_dict())
        if self.meta.complete:  # the swap: from now on readers open this version
            sharing.publish(self.path, self._version, self.meta.to_dict())
            self._published = True
            sharing.prune(self.path, keep=self._version.name)

    def refresh(self, accept: Callable[[IndexMeta], bool] | None = None) -> bool:
        """Move to the index's newest complete version if a build replaced it since it was opened."""
        if self._view is None:  # a build in progress, or closed
            return False
        pointer = sharing.read_pointer(self.path)
        if pointer is None or pointer.get("version") == self._view.description.get("version"):
            return False
        fresh = EdgeStore(self.path, lock_timeout=self.lock_timeout)
        if fresh._shard is None or (accept is not None and not accept(fresh.meta)):
            fresh.close()
            return False
        old_shard, old_view = self._shard, self._view
        self._shard, self._view, self._meta = fresh._shard, fresh._view, fresh._meta
        fresh._shard, fresh._view = None, None
        if old_shard is not None:
            old_shard.close()
        old_view.close()
        return True

    @property
    def _open_shard(self) -> edge.EdgeShard:
        if self._shard is None:
            raise RetrievalError(f"index at {self.path} is closed")
        return self._shard

    def _upsert(self, ids, dense, bm25, payloads) -> None:
        points = [edge.Point(i, {DENSE: d, BM25: s}, p) for i, d, s, p in zip(ids, dense, bm25, payloads, strict=True)]
        self._open_shard.update(edge.UpdateOperation.upsert_points(points))

    def _optimize(self) -> None:
        shard = self._open_shard
        shard.optimize()
        shard.flush()

    def _delete(self, ids: list[int]) -> None:
        self._open_shard.update(edge.UpdateOperation.delete_points(ids))

    def flush(self) -> None:
        """Make the writes so far durable."""
        self._open_shard.flush()

    def _scroll(self, limit, offset):
        records, next_offset = self._open_shard.scroll(edge.ScrollRequest(limit=limit, offset=offset, with_payload=True))
        return [r.payload for r in records], next_offset

    def _distinct_titles(self, limit: int) -> int:
        found = self._open_shard.facet(edge.FacetRequest(key=TITLE, limit=max(limit, 1), exact=True))
        return sum(1 for hit in found.hits if hit.count > 0)  # a title whose blocks were all deleted counts 0

    def iter_points(self, fields: list[str] | None = None, batch: int = 1024) -> Iterator[tuple[int, dict]]:
        """Every stored point as ``(point id, payload)``; the payload holds only ``fields``."""
        selector: Any = True if fields is None else (edge.PayloadSelector.Include(fields) if fields else False)
        offset = None
        while True:
            records, offset = self._open_shard.scroll(edge.ScrollRequest(offset=offset, limit=batch, with_payload=selector))
            for record in records:
                yield int(record.id), dict(record.payload or {})
            if offset is None or not records:
                return

    def fetch(self, ids: list[int]) -> list[dict]:
        """The payloads of the points ``ids`` (in that order; ids not stored are left out)."""
        found = {int(r.id): dict(r.payload or {}) for r in self._open_shard.retrieve(list(ids), True, False)}
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        """The number of blocks stored."""
        return self._open_shard.count(edge.CountRequest(exact=True))

    def count_title(self, title: str) -> int:
        """The number of blocks of the article ``title``."""
        match = edge.Filter(must=[edge.FieldCondition(TITLE, match=edge.MatchValue(title))])
        return self._open_shard.count(edge.CountRequest(exact=True, filter=match))

    def _title_payloads(self, title: str) -> list[dict]:
        match = edge.Filter(must=[edge.FieldCondition(TITLE, match=edge.MatchValue(title))])
        found, offset = [], None
        while True:
            records, offset = self._open_shard.scroll(edge.ScrollRequest(limit=1024, offset=offset, filter=match,
                                                                         with_payload=True))
            found += [dict(r.payload or {}) for r in records]
            if offset is None or not records:
                return found

    def _query(self, dense, bm25, exclude_title, k, candidates):
        where = (
            edge.Filter(must_not=[edge.FieldCondition(TITLE, match=edge.MatchValue(exclude_title))])
            if exclude_title
            else None
        )
        if dense is not None and bm25 is not None:
            request = edge.QueryRequest(
                limit=k,
                with_payload=True,
                query=edge.Fusion.Rrf(k=RRF_K),
                prefetches=[
                    edge.Prefetch(limit=candidates, query=edge.Query.Nearest(dense, using=DENSE), filter=where,
                                  params=hnsw_params(candidates, int8=self.meta.int8)),
                    edge.Prefetch(limit=candidates, query=edge.Query.Nearest(bm25, using=BM25), filter=where),
                ],
            )
        else:
            vector, using = (dense, DENSE) if dense is not None else (bm25, BM25)
            request = edge.QueryRequest(
                limit=k, with_payload=True, query=edge.Query.Nearest(vector, using=using), filter=where,
                params=hnsw_params(k, int8=self.meta.int8) if dense is not None else None,
            )
        return [(p.payload, p.score) for p in self._open_shard.query(request)]

    def close(self) -> None:
        """Release the shard and the version read; an unfinished build is discarded."""
        if self._shard is not None:
            self._shard.close()
            self._shard = None
        if self._view is not None:
            self._view.close()
            self._view = None
        if self._writer is not None:
            if self._version is not None and not self._published:  # an unfinished build
                shutil.rmtree(self._version, ignore_errors=True)
            sharing.remove_if_unused(self.path)
            self._writer.release()
            self._writer = None

    def size_on_disk(self) -> int:
        """Bytes allocated on disk by the version in use (or being built)."""
        if self._version is not None:
            return tree_size(self._version)
        if self._view is not None and self._view.source.is_dir():
            return tree_size(self._view.source)
        return tree_size(self.path)


class WorkingEdgeStore(EdgeStore):
    """An embedded index changed over a long, resumable job (a dump build or update).

    Readers must never see a half-changed index, yet a dump build killed after hours must go on
    where it stopped. So the job writes to a private working copy in ``work_dir`` (kept across
    interruptions, outside the index folder) and ``finalize`` publishes it as a new version of
    the index (the same swap as any build). An update's working copy starts as a real copy of
    the current version. ``exists`` and ``meta`` describe the working copy when there is one,
    else the published index."""

    def __init__(self, path: str | Path, work_dir: str | Path, *, lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
                 int8: bool = False) -> None:
        super().__init__(path, open_existing=False, lock_timeout=lock_timeout, int8=int8)
        self.work_dir = Path(work_dir)
        if (self.work_dir / "meta.json").is_file():
            self._meta = read_meta_file(self.work_dir / "meta.json")
            self._shard = load_shard(self.work_dir / "shard", self._meta.name)
        else:
            pointer = sharing.read_pointer(self.path)
            if pointer is not None:
                self._meta = IndexMeta.from_dict({k: v for k, v in pointer.items() if k != "version"}, str(self.path))

    def _create(self, meta: IndexMeta) -> None:
        if sharing.read_pointer(self.path) is not None:
            raise RetrievalError(f"index {self.path.name} already exists in {self.path.parent}; delete it or rebuild with --replace")
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True)
        meta.name, meta.backend, meta.int8 = self.path.name, "edge", self.int8
        self._shard = edge.EdgeShard.create(str(self.work_dir / "shard"), shard_config(meta.dim, wal=True, int8=self.int8))
        self._shard.update(edge.UpdateOperation.create_field_index(TITLE, edge.PayloadSchemaType.Keyword))
        self._meta = meta
        self._write_work_meta()

    def _write_work_meta(self) -> None:
        data = self.meta.to_dict()
        data["complete"] = False  # a working copy is never complete: only its published version is
        sharing.write_json_atomically(self.work_dir / "meta.json", data)

    @property
    def _open_shard(self) -> edge.EdgeShard:
        if self._shard is None and self._meta is not None and not (self.work_dir / "meta.json").is_file():
            self._start_from_published()
        return super()._open_shard

    def _start_from_published(self) -> None:
        """A working copy of the current version (a real copy: the published files stay untouched)."""
        with sharing.WriterLock(self.path, self.path.name, self.lock_timeout):
            pointer = sharing.read_pointer(self.path)
            if pointer is None:
                raise RetrievalError(f"index {self.path.name} disappeared while it was being updated")
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir.parent.mkdir(parents=True, exist_ok=True)
            staging = self.work_dir.with_name(self.work_dir.name + ".copying")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(sharing.shard_dir(self.path, pointer), staging / "shard")
            os.replace(staging, self.work_dir)
        self._write_work_meta()
        self._shard = load_shard(self.work_dir / "shard", self.path.name)

    def _save_meta(self) -> None:
        if not self.meta.complete:
            self._write_work_meta()
            return
        shard = self._open_shard
        shard.flush()
        shard.close()
        self._shard = None
        with sharing.WriterLock(self.path, self.path.name, self.lock_timeout):
            version = sharing.new_version(self.path)
            os.replace(self.work_dir / "shard", version / "shard")
            sharing.write_json_atomically(version / "meta.json", self.meta.to_dict())
            sharing.publish(self.path, version, self.meta.to_dict())
            sharing.prune(self.path, keep=version.name)
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def close(self) -> None:
        """Release the working copy's shard (the copy stays for the next run)."""
        if self._shard is not None:
            self._shard.close()
            self._shard = None

    def discard(self) -> None:
        """Forget the working copy (the published index, if any, is untouched)."""
        self.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)
