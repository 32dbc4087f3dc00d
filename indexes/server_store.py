"""Indexes as collections on a Qdrant server or cluster, through ``qdrant-client``
(:class:`ServerStore`); the collection's metadata holds its description. A ``file:PATH`` url (or
``path=``) selects qdrant-client's local mode, a pure-Python stand-in for a server used in tests.
:class:`ServerOptions` lays a new collection out for a corpus the size of Wikipedia.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException

from claire.errors import RetrievalError
from claire.indexes import sparse
from claire.indexes.index_meta import IndexMeta
from claire.indexes.store import BM25, DENSE, RRF_K, TITLE, IndexStore, tree_size

META_KEY = "claire_index"
"""The key of a collection's metadata that holds its CLAIRE description."""


@dataclass
class Connection:
    """A client of a Qdrant server (or of qdrant-client's local mode) and how to name it."""

    client: QdrantClient
    where: str  # for messages
    local_path: Path | None  # set in qdrant-client's local mode


def connect(url: str | None, path: str | Path | None, api_key: str | None) -> Connection:
    """A client for the server at ``url`` or the local-mode store at ``path``."""
    if url and url.rstrip("/").endswith("/api/search"):  # see claire.indexes.http_search
        raise RetrievalError(f"{url} is a `claire serve` search endpoint, which can only be searched; "
                             "build, list and delete indexes on the machine that serves them")
    if url and url.startswith("file:"):
        path, url = url.removeprefix("file:").removeprefix("//"), None
    if url is not None and path is None:
        return Connection(QdrantClient(url=url, api_key=api_key, timeout=60), f"Qdrant at {url}", None)
    if url is not None or path is None:
        raise RetrievalError("give either the url of a Qdrant server or a local path, not both or neither")
    try:
        return Connection(QdrantClient(path=str(path)), f"local Qdrant store {path}", Path(path))
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise RetrievalError(f"the local Qdrant store {path} is in use by another process") from None
        raise


@contextmanager
def server_errors(where: str) -> Iterator[None]:
    """Turn connection and protocol failures into a RetrievalError that names the server."""
    try:
        yield
    except (ApiException, OSError) as exc:
        raise RetrievalError(f"{where}: {exc}") from None


def collection_meta(client: QdrantClient, collection: str, where: str) -> IndexMeta | None:
    """The CLAIRE description of a collection, or None for a collection of something else."""
    metadata = client.get_collection(collection).config.metadata or {}
    if META_KEY not in metadata:
        return None
    return IndexMeta.from_dict(metadata[META_KEY], f"collection {collection} on {where}")


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
        connection = connect(url, path, api_key)
        self._client, self._where, self._local_path = connection.client, connection.where, connection.local_path
        try:
            with server_errors(self._where):
                if self._client.collection_exists(collection):
                    self._meta = collection_meta(self._client, collection, self._where)
                    if self._meta is None:
                        raise RetrievalError(f"collection {collection} on {self._where} is not a CLAIRE index")
        except BaseException:
            self._client.close()
            raise

    def _create(self, meta: IndexMeta) -> None:
        meta.name, meta.backend = self.collection, "server"
        with server_errors(self._where):
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
                metadata={META_KEY: meta.to_dict()},
            )
            if self._local_path is None:  # local mode ignores payload indexes (and warns about them)
                self._client.create_payload_index(self.collection, TITLE, models.PayloadSchemaType.KEYWORD)

    def _save_meta(self) -> None:
        with server_errors(self._where):
            self._client.update_collection(self.collection, metadata={META_KEY: self.meta.to_dict()})

    def _upsert(self, ids, dense, bm25, payloads) -> None:
        points = [
            models.PointStruct(id=i, vector={DENSE: d, BM25: sparse.for_client(s)}, payload=p)
            for i, d, s, p in zip(ids, dense, bm25, payloads, strict=True)
        ]
        parallel = self.options.upload_parallel if self._local_path is None else 1  # local mode is single-threaded
        with server_errors(self._where):
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
        with server_errors(self._where):
            while self._client.get_collection(self.collection).status != models.CollectionStatus.GREEN:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.5)

    def _delete(self, ids: list[int]) -> None:
        with server_errors(self._where):
            self._client.delete(self.collection, points_selector=models.PointIdsList(points=ids), wait=True)

    def _scroll(self, limit, offset):
        with server_errors(self._where):
            records, next_offset = self._client.scroll(self.collection, limit=limit, offset=offset, with_payload=True)
        return [r.payload for r in records], next_offset

    def _distinct_titles(self, limit: int) -> int:
        with server_errors(self._where):
            hits = self._client.facet(self.collection, TITLE, limit=max(limit, 1), exact=True).hits
            return sum(1 for hit in hits if hit.count > 0)

    def iter_points(self, fields: list[str] | None = None, batch: int = 1024) -> Iterator[tuple[int, dict]]:
        """Every stored point as ``(point id, payload)``; the payload holds only ``fields``."""
        selector: Any = True if fields is None else (models.PayloadSelectorInclude(include=fields) if fields else False)
        offset = None
        while True:
            with server_errors(self._where):
                records, offset = self._client.scroll(self.collection, offset=offset, limit=batch,
                                                      with_payload=selector, with_vectors=False)
            for record in records:
                yield int(record.id), dict(record.payload or {})
            if offset is None or not records:
                return

    def fetch(self, ids: list[int]) -> list[dict]:
        """The payloads of the points ``ids`` (in that order; ids not stored are left out)."""
        with server_errors(self._where):
            records = self._client.retrieve(self.collection, ids=list(ids), with_payload=True, with_vectors=False)
        found = {int(r.id): dict(r.payload or {}) for r in records}
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        """The number of blocks stored."""
        with server_errors(self._where):
            return self._client.count(self.collection, exact=True).count

    def count_title(self, title: str) -> int:
        """The number of blocks of the article ``title``."""
        match = models.Filter(must=[models.FieldCondition(key=TITLE, match=models.MatchValue(value=title))])
        with server_errors(self._where):
            return self._client.count(self.collection, count_filter=match, exact=True).count

    def _title_payloads(self, title: str) -> list[dict]:
        match = models.Filter(must=[models.FieldCondition(key=TITLE, match=models.MatchValue(value=title))])
        found, offset = [], None
        while True:
            with server_errors(self._where):
                records, offset = self._client.scroll(self.collection, scroll_filter=match, limit=1024, offset=offset,
                                                      with_payload=True, with_vectors=False)
            found += [dict(r.payload or {}) for r in records]
            if offset is None or not records:
                return found

    def _query(self, dense, bm25, exclude_title, k, candidates):
        where = (
            models.Filter(must_not=[models.FieldCondition(key=TITLE, match=models.MatchValue(value=exclude_title))])
            if exclude_title
            else None
        )
        with server_errors(self._where):
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
        """Release the client (and the upload threads)."""
        if self._uploads is not None:
            self._uploads.shutdown()
            self._uploads = None
        self._client.close()

    def size_on_disk(self) -> int | None:
        """Bytes used on local disk (local mode), or None on a server."""
        if self._local_path is None:
            return None
        return tree_size(self._local_path / "collection" / self.collection)
