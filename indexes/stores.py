"""Vector stores for corpus blocks behind one interface: the embedded Qdrant engine and a server.

Both backends hold the same schema — a named dense vector ``dense`` (cosine), a sparse vector
``bm25`` whose IDF the engine applies, the block as payload and a keyword index on
``document_title`` — and answer the same queries: dense, BM25, or both fused with reciprocal
rank fusion in one request, always able to exclude one article by title.

- :class:`EdgeStore` runs Qdrant's engine in-process (``qdrant-edge-py``); an index is a directory
  ``<root>/<name>/`` holding complete versions of the shard and a description (``meta.json``)
  naming the current one, so many processes read while one builds (see :mod:`.sharing`).
- :class:`ServerStore` talks to a Qdrant server or cluster through ``qdrant-client``; an index is
  a collection whose metadata holds its description. A ``file:PATH`` url (or ``path=``) selects
  qdrant-client's local mode, a pure-Python stand-in for a server used in tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import qdrant_edge as edge
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException

from claire.errors import RetrievalError
from claire.indexes import sharing, sparse
from claire.indexes.corpus import Block

SearchMode = Literal["hybrid", "dense", "bm25"]

DENSE = "dense"
BM25 = "bm25"
TITLE = "document_title"
TIE_MARGIN = 10
RRF_K = 60
FORMAT = 1
_META_KEY = "claire_index"
_BATCH = 512
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass
class IndexMeta:
    """What an index records about itself: its embedder, corpus statistics and build."""

    name: str
    embedder: str
    embedder_model: str
    dim: int
    blocks: int = 0
    documents: int = 0
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    build_seconds: float = 0.0
    backend: str = ""
    sparse_model: str = f"bm25-{sparse.LANGUAGE}"
    complete: bool = False
    format: int = FORMAT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> IndexMeta:
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{key: value for key, value in data.items() if key in known})
        except (AttributeError, TypeError):
            raise RetrievalError(f"{where} does not describe a CLAIRE index; delete and rebuild it") from None


def point_id(block_id: str) -> int:
    """The Qdrant point id of a block: 63 bits of a hash of its id (the id stays in the payload)."""
    return int.from_bytes(hashlib.blake2b(block_id.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def check_name(name: str) -> None:
    """Refuse names a user may not give (CLAIRE's own temporary folders start with a dot)."""
    if not _NAME.match(name):
        raise RetrievalError(
            f"invalid index name {name!r}: use letters, digits, '_', '-' or '.', starting with a letter or digit"
        )


class IndexStore(ABC):
    """One index of corpus blocks. Create it (``create`` → ``upsert``… → ``finalize``) or open an
    existing one, then ``search``. Not safe for concurrent use: callers serialise access."""

    _meta: IndexMeta | None = None
    _build_started: float | None = None

    @property
    def exists(self) -> bool:
        return self._meta is not None

    @property
    def meta(self) -> IndexMeta:
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

    def upsert(self, blocks: list[Block], dense: np.ndarray) -> None:
        """Store blocks with their dense vectors (one row each); BM25 vectors are computed here."""
        meta = self.meta
        if dense.shape != (len(blocks), meta.dim):
            raise RetrievalError(
                f"got {dense.shape[0]}x{dense.shape[1] if dense.ndim > 1 else '?'} vectors for "
                f"{len(blocks)} blocks; index {meta.name} needs {meta.dim}-dimensional vectors"
            )
        for start in range(0, len(blocks), _BATCH):
            batch = blocks[start : start + _BATCH]
            self._upsert(
                [point_id(b.id) for b in batch],
                dense[start : start + _BATCH].astype(np.float32).tolist(),
                [sparse.document_vector(b.embed_text()) for b in batch],
                [b.model_dump(exclude_none=True) for b in batch],
            )

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
            terms = sparse.query_vector(text)
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


def _tree_size(path: Path) -> int:
    """Bytes allocated on disk under ``path`` (the engine preallocates sparse files, so their
    apparent size overstates the space used)."""
    total = 0
    for file in path.rglob("*"):
        if file.is_file():
            stat = file.stat()
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total


# --- embedded engine ---------------------------------------------------------------------


def _read_meta_file(path: Path) -> IndexMeta:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RetrievalError(f"cannot read {path} ({exc}); delete the index and rebuild it") from None
    return IndexMeta.from_dict(data, str(path))


def _load_shard(path: Path, name: str) -> edge.EdgeShard:
    try:
        return edge.EdgeShard.load(str(path))
    except Exception as exc:  # qdrant-edge raises a bare Exception for every failure
        if "WouldBlock" in str(exc):  # the write-ahead log is locked by another open
            raise RetrievalError(
                f"index {name} is in use by another process (or already open in this one); "
                "close it first or wait for it to finish"
            ) from None
        raise RetrievalError(f"cannot open index {name} at {path}: {exc}") from None


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
    ) -> None:
        self.path = Path(path)
        self.replace, self.lock_timeout = replace, lock_timeout
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
                        self._shard = _load_shard(self._view.shard, self._meta.name)
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
            config = edge.EdgeConfig(
                vectors={DENSE: edge.EdgeVectorParams(size=meta.dim, distance=edge.Distance.Cosine)},
                sparse_vectors={BM25: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
                wal_enabled=False,  # a build is published only after its final flush
            )
            self._shard = edge.EdgeShard.create(str(self._version / "shard"), config)
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
        self._open_shard.flush()

    def _scroll(self, limit, offset):
        records, next_offset = self._open_shard.scroll(edge.ScrollRequest(limit=limit, offset=offset, with_payload=True))
        return [r.payload for r in records], next_offset

    def _distinct_titles(self, limit: int) -> int:
        return len(self._open_shard.facet(edge.FacetRequest(key=TITLE, limit=max(limit, 1), exact=True)))

    def iter_points(self, fields: list[str] | None = None, batch: int = 1024) -> Iterator[tuple[int, dict]]:
        selector: Any = True if fields is None else (edge.PayloadSelector.Include(fields) if fields else False)
        offset = None
        while True:
            records, offset = self._open_shard.scroll(edge.ScrollRequest(offset=offset, limit=batch, with_payload=selector))
            for record in records:
                yield int(record.id), dict(record.payload or {})
            if offset is None or not records:
                return

    def fetch(self, ids: list[int]) -> list[dict]:
        found = {int(r.id): dict(r.payload or {}) for r in self._open_shard.retrieve(list(ids), True, False)}
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        return self._open_shard.count(edge.CountRequest(exact=True))

    def count_title(self, title: str) -> int:
        match = edge.Filter(must=[edge.FieldCondition(TITLE, match=edge.MatchValue(title))])
        return self._open_shard.count(edge.CountRequest(exact=True, filter=match))

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
                                  params=_hnsw(candidates)),
                    edge.Prefetch(limit=candidates, query=edge.Query.Nearest(bm25, using=BM25), filter=where),
                ],
            )
        else:
            vector, using = (dense, DENSE) if dense is not None else (bm25, BM25)
            request = edge.QueryRequest(
                limit=k, with_payload=True, query=edge.Query.Nearest(vector, using=using), filter=where,
                params=_hnsw(k) if dense is not None else None,
            )
        return [(p.payload, p.score) for p in self._open_shard.query(request)]

    def close(self) -> None:
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
        if self._version is not None:
            return _tree_size(self._version)
        if self._view is not None and self._view.source.is_dir():
            return _tree_size(self._view.source)
        return _tree_size(self.path)


# --- Qdrant server (or qdrant-client local mode) -----------------------------------------


@dataclass
class _Connection:
    client: QdrantClient
    where: str  # for messages
    local_path: Path | None  # set in qdrant-client's local mode


def _connect(url: str | None, path: str | Path | None, api_key: str | None) -> _Connection:
    if url and url.rstrip("/").endswith("/api/search"):  # see claire.indexes.http_search
        raise RetrievalError(f"{url} is a `claire serve` search endpoint, which can only be searched; "
                             "build, list and delete indexes on the machine that serves them")
    if url and url.startswith("file:"):
        path, url = url.removeprefix("file:").removeprefix("//"), None
    if url is not None and path is None:
        return _Connection(QdrantClient(url=url, api_key=api_key, timeout=60), f"Qdrant at {url}", None)
    if url is not None or path is None:
        raise RetrievalError("give either the url of a Qdrant server or a local path, not both or neither")
    try:
        return _Connection(QdrantClient(path=str(path)), f"local Qdrant store {path}", Path(path))
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise RetrievalError(f"the local Qdrant store {path} is in use by another process") from None
        raise


@contextmanager
def _server_errors(where: str) -> Iterator[None]:
    """Turn connection and protocol failures into a RetrievalError that names the server."""
    try:
        yield
    except (ApiException, OSError) as exc:
        raise RetrievalError(f"{where}: {exc}") from None


def _collection_meta(client: QdrantClient, collection: str, where: str) -> IndexMeta | None:
    metadata = client.get_collection(collection).config.metadata or {}
    if _META_KEY not in metadata:
        return None
    return IndexMeta.from_dict(metadata[_META_KEY], f"collection {collection} on {where}")


@dataclass
class ServerOptions:
    """How a new collection is laid out on a Qdrant server or cluster, and how uploads go.

    For a corpus the size of Wikipedia: ``on_disk`` keeps dense vectors and payloads on disk
    (memory-mapped), ``int8`` adds scalar quantization (int8 copies in RAM, a quarter of the
    float32 size, rescored from disk), ``shards`` spreads the collection over a cluster's nodes,
    and ``upload_parallel`` sends an upsert's points as that many concurrent requests.
    """

    shards: int = 1
    on_disk: bool = False
    int8: bool = False
    upload_parallel: int = 1


class WorkingEdgeStore(EdgeStore):
    """An embedded index changed over a long, resumable job (a dump build or update).

    Readers must never see a half-changed index, yet a dump build killed after hours must go on
    where it stopped. So the job writes to a private working copy in ``work_dir`` (kept across
    interruptions, outside the index folder) and ``finalize`` publishes it as a new version of
    the index (the same swap as any build). An update's working copy starts as a real copy of
    the current version. ``exists`` and ``meta`` describe the working copy when there is one,
    else the published index."""

    def __init__(self, path: str | Path, work_dir: str | Path, *, lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT) -> None:
        super().__init__(path, open_existing=False, lock_timeout=lock_timeout)
        self.work_dir = Path(work_dir)
        if (self.work_dir / "meta.json").is_file():
            self._meta = _read_meta_file(self.work_dir / "meta.json")
            self._shard = _load_shard(self.work_dir / "shard", self._meta.name)
        else:
            pointer = sharing.read_pointer(self.path)
            if pointer is not None:
                self._meta = IndexMeta.from_dict({k: v for k, v in pointer.items() if k != "version"}, str(self.path))

    def _create(self, meta: IndexMeta) -> None:
        if sharing.read_pointer(self.path) is not None:
            raise RetrievalError(f"index {self.path.name} already exists in {self.path.parent}; delete it or rebuild with --replace")
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True)
        meta.name, meta.backend = self.path.name, "edge"
        config = edge.EdgeConfig(
            vectors={DENSE: edge.EdgeVectorParams(size=meta.dim, distance=edge.Distance.Cosine)},
            sparse_vectors={BM25: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
        )
        self._shard = edge.EdgeShard.create(str(self.work_dir / "shard"), config)
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
        self._shard = _load_shard(self.work_dir / "shard", self.path.name)

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
        if self._shard is not None:
            self._shard.close()
            self._shard = None

    def discard(self) -> None:
        """Forget the working copy (the published index, if any, is untouched)."""
        self.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)


class ServerStore(IndexStore):
    """An index as a collection on a Qdrant server (``url``) or in qdrant-client's local mode
    (``path``, or a ``file:PATH`` url). Opens the collection if it exists."""

    def __init__(
        self,
        url: str | None = None,
        path: str | Path | None = None,
        api_key: str | None = None,
        *,
        collection: str,
        options: ServerOptions | None = None,
    ) -> None:
        self.collection = collection
        self.options = options or ServerOptions()
        self._uploads: ThreadPoolExecutor | None = None
        connection = _connect(url, path, api_key)
        self._client, self._where, self._local_path = connection.client, connection.where, connection.local_path
        try:
            with _server_errors(self._where):
                if self._client.collection_exists(collection):
                    self._meta = _collection_meta(self._client, collection, self._where)
                    if self._meta is None:
                        raise RetrievalError(f"collection {collection} on {self._where} is not a CLAIRE index")
        except BaseException:
            self._client.close()
            raise

    def _create(self, meta: IndexMeta) -> None:
        meta.name, meta.backend = self.collection, "server"
        with _server_errors(self._where):
            options = self.options
            quantization = (
                models.ScalarQuantization(
                    scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, quantile=0.99, always_ram=True)
                )
                if options.int8
                else None
            )
            self._client.create_collection(
                self.collection,
                vectors_config={
                    DENSE: models.VectorParams(size=meta.dim, distance=models.Distance.COSINE, on_disk=options.on_disk or None)
                },
                sparse_vectors_config={
                    BM25: models.SparseVectorParams(
                        modifier=models.Modifier.IDF,
                        index=models.SparseIndexParams(on_disk=True) if options.on_disk else None,
                    )
                },
                shard_number=options.shards if options.shards > 1 else None,
                on_disk_payload=options.on_disk or None,
                quantization_config=quantization,
                metadata={_META_KEY: meta.to_dict()},
            )
            if self._local_path is None:  # local mode ignores payload indexes (and warns about them)
                self._client.create_payload_index(self.collection, TITLE, models.PayloadSchemaType.KEYWORD)

    def _save_meta(self) -> None:
        with _server_errors(self._where):
            self._client.update_collection(self.collection, metadata={_META_KEY: self.meta.to_dict()})

    def _upsert(self, ids, dense, bm25, payloads) -> None:
        points = [
            models.PointStruct(id=i, vector={DENSE: d, BM25: sparse.for_client(s)}, payload=p)
            for i, d, s, p in zip(ids, dense, bm25, payloads, strict=True)
        ]
        parallel = self.options.upload_parallel if self._local_path is None else 1  # local mode is single-threaded
        with _server_errors(self._where):
            if parallel <= 1 or len(points) < 2 * parallel:
                self._client.upsert(self.collection, points=points, wait=True)
                return
            if self._uploads is None:
                self._uploads = ThreadPoolExecutor(parallel, thread_name_prefix="qdrant-upload")
            size = -(-len(points) // parallel)
            parts = [points[i : i + size] for i in range(0, len(points), size)]
            for done in [self._uploads.submit(self._client.upsert, self.collection, points=part, wait=True) for part in parts]:
                done.result()

    def _optimize(self) -> None:
        """Wait (up to ten minutes) for the server's optimizers to finish indexing."""
        deadline = time.monotonic() + 600
        with _server_errors(self._where):
            while self._client.get_collection(self.collection).status != models.CollectionStatus.GREEN:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.5)

    def _delete(self, ids: list[int]) -> None:
        with _server_errors(self._where):
            self._client.delete(self.collection, points_selector=models.PointIdsList(points=ids), wait=True)

    def _scroll(self, limit, offset):
        with _server_errors(self._where):
            records, next_offset = self._client.scroll(self.collection, limit=limit, offset=offset, with_payload=True)
        return [r.payload for r in records], next_offset

    def _distinct_titles(self, limit: int) -> int:
        with _server_errors(self._where):
            return len(self._client.facet(self.collection, TITLE, limit=max(limit, 1), exact=True).hits)

    def iter_points(self, fields: list[str] | None = None, batch: int = 1024) -> Iterator[tuple[int, dict]]:
        selector: Any = True if fields is None else (models.PayloadSelectorInclude(include=fields) if fields else False)
        offset = None
        while True:
            with _server_errors(self._where):
                records, offset = self._client.scroll(self.collection, offset=offset, limit=batch,
                                                      with_payload=selector, with_vectors=False)
            for record in records:
                yield int(record.id), dict(record.payload or {})
            if offset is None or not records:
                return

    def fetch(self, ids: list[int]) -> list[dict]:
        with _server_errors(self._where):
            records = self._client.retrieve(self.collection, ids=list(ids), with_payload=True, with_vectors=False)
        found = {int(r.id): dict(r.payload or {}) for r in records}
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        with _server_errors(self._where):
            return self._client.count(self.collection, exact=True).count

    def count_title(self, title: str) -> int:
        match = models.Filter(must=[models.FieldCondition(key=TITLE, match=models.MatchValue(value=title))])
        with _server_errors(self._where):
            return self._client.count(self.collection, count_filter=match, exact=True).count

    def _query(self, dense, bm25, exclude_title, k, candidates):
        where = (
            models.Filter(must_not=[models.FieldCondition(key=TITLE, match=models.MatchValue(value=exclude_title))])
            if exclude_title
            else None
        )
        with _server_errors(self._where):
            if dense is not None and bm25 is not None:
                result = self._client.query_points(
                    self.collection,
                    prefetch=[
                        models.Prefetch(query=dense, using=DENSE, limit=candidates, filter=where),
                        models.Prefetch(query=sparse.for_client(bm25), using=BM25, limit=candidates, filter=where),
                    ],
                    query=models.RrfQuery(rrf=models.Rrf(k=RRF_K)),
                    limit=k,
                    with_payload=True,
                )
            else:
                vector, using = (dense, DENSE) if dense is not None else (sparse.for_client(bm25), BM25)
                result = self._client.query_points(
                    self.collection, query=vector, using=using, query_filter=where, limit=k, with_payload=True
                )
        return [(p.payload, p.score) for p in result.points]

    def close(self) -> None:
        if self._uploads is not None:
            self._uploads.shutdown()
            self._uploads = None
        self._client.close()

    def size_on_disk(self) -> int | None:
        if self._local_path is None:
            return None
        return _tree_size(self._local_path / "collection" / self.collection)


# --- opening, listing and deleting indexes by name ---------------------------------------


def _available(root: Path, url: str | None, api_key: str | None) -> str:
    names = [m.name for m in list_indexes(root, url, api_key=api_key)]
    return ", ".join(names) if names else "none yet"


def open_index(
    name: str,
    *,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    create_meta: IndexMeta | None = None,
    replace: bool = False,
    lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
) -> IndexStore:
    """Open the index ``name`` — embedded under ``root``, or on the Qdrant server at ``url`` —
    or create it from ``create_meta``. An embedded index is built as a new version of its folder
    (``replace`` lets it replace an existing one at the end); a build waits up to
    ``lock_timeout`` s for another build of the same index to finish."""
    check_name(name)
    store: IndexStore = (
        ServerStore(url, api_key=api_key, collection=name)
        if url
        else EdgeStore(Path(root) / name, open_existing=create_meta is None, replace=replace, lock_timeout=lock_timeout)
    )
    where = url or str(root)
    if create_meta is not None:
        if store.exists:
            store.close()
            raise RetrievalError(f"index {name} already exists in {where}; delete it or rebuild with --replace")
        store.create(create_meta)
        return store
    if not store.exists:
        store.close()
        raise RetrievalError(f"no index named {name} in {where}; available: {_available(Path(root), url, api_key)}")
    if not store.meta.complete:
        store.close()
        raise RetrievalError(f"index {name} was never finished (interrupted build?); rebuild it with --replace")
    return store


def list_indexes(root: Path, url: str | None = None, *, api_key: str | None = None) -> list[IndexMeta]:
    """The indexes under ``root`` (embedded) or on the Qdrant server at ``url``, by name."""
    if url is None:
        root = Path(root)
        if not root.is_dir():
            return []
        return [_read_meta_file(d / "meta.json") for d in sorted(root.iterdir()) if (d / "meta.json").is_file()]
    connection = _connect(url, None, api_key)
    try:
        with _server_errors(connection.where):
            found = [
                _collection_meta(connection.client, c.name, connection.where)
                for c in connection.client.get_collections().collections
            ]
    finally:
        connection.client.close()
    return sorted((m for m in found if m is not None), key=lambda m: m.name)


def _hnsw(limit: int) -> edge.SearchParams:
    """HNSW beam width for a dense search of ``limit`` results: about 2.5x the results, at least 128.
    (The engine's default searched wider: ~1.5x slower at the same top-50 on 20k random vectors.)"""
    return edge.SearchParams(hnsw_ef=max(128, 5 * limit // 2))


def delete_index(
    name: str,
    *,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Delete the index ``name``. An embedded index waits for a build in progress; processes that
    have it open keep searching their view of it until they close it."""
    check_name(name)
    if url is not None:
        connection = _connect(url, None, api_key)
        client = connection.client
        try:
            with _server_errors(connection.where):
                if client.collection_exists(name) and _collection_meta(client, name, connection.where):
                    client.delete_collection(name)
                    return
        finally:
            client.close()
    else:
        path = Path(root) / name
        if (path / sharing.POINTER).is_file():
            with sharing.WriterLock(path, name, lock_timeout):
                (path / sharing.POINTER).unlink(missing_ok=True)  # from here on the index is gone
                sharing.prune(path, keep=None)
                sharing.remove_if_unused(path)
            return
    raise RetrievalError(f"no index named {name} in {url or root}; available: {_available(Path(root), url, api_key)}")
