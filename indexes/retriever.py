"""Search an index with the embedder it was built with, and build indexes from blocks.

:class:`Retriever` pairs an :class:`~claire.indexes.catalog.IndexStore` with a matching
:class:`~claire.indexes.embedders.Embedder` and answers text queries (hybrid dense + BM25 by
default) with ranked :class:`Hit` s. It is safe to call from several threads (the async agent
calls it through ``asyncio.to_thread``). :func:`build_index` embeds and stores a corpus;
:func:`ensure_demo_index` builds the bundled demo corpus on first use.
"""

from __future__ import annotations

import hashlib

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from claire.errors import DatasetError, RetrievalError
from claire.indexes.corpus import (MAX_BLOCK_CHARS, demo_corpus_path, demo_editions_path, linked_both_ways, read_corpus,
                                   split_oversize)
from claire.domain import Block
from claire.indexes.embedders import MULTILINGUAL, Embedder, load_embedder
from claire.indexes.query_batch import QueryBatcher
from claire.indexes.query_encoders import QueryEncoder, query_encoder
from claire.indexes.index_meta import IndexMeta, check_name
from claire.indexes.store import IndexStore, SearchMode
from claire.indexes.catalog import delete_index, list_indexes, open_index
from claire.indexes.sharing import DEFAULT_LOCK_TIMEOUT

QUERY_CACHE_SIZE = 4096
EXPORT_FOLDER = ".query-models"  # under the index root: not an index (no meta.json), rebuilt when missing
log = logging.getLogger(__name__)


@dataclass
class Hit:
    """One search result: the block, its score (RRF, cosine or BM25 by mode) and 1-based rank."""

    block: Block
    score: float
    rank: int


@dataclass
class BuildSummary:
    """What building an index produced and how fast."""

    name: str
    blocks: int
    documents: int
    seconds: float
    blocks_per_s: float
    size_on_disk: int | None
    split: int = 0  # blocks over the size limit that were split into parts


class Retriever:
    """Text search over one index with the embedder it was built with. Queries are embedded by
    ``query_runtime`` (see :mod:`.query_encoders`; ONNX exports are kept in ``export_folder``)."""

    def __init__(self, store: IndexStore, embedder: Embedder, *, query_runtime: str = "torch",
                 export_folder: Path | None = None) -> None:
        meta = store.meta
        if embedder.model_id != meta.embedder_model or embedder.dim != meta.dim:
            raise RetrievalError(
                f"index {meta.name} was built with {meta.embedder} ({meta.embedder_model}, dim {meta.dim}); "
                f"you asked for {embedder.name} ({embedder.model_id}, dim {embedder.dim}). "
                f"Use --embedder {meta.embedder} or rebuild the index with the embedder you want."
            )
        self.store = store
        self.embedder = embedder
        if query_runtime != "torch" and export_folder is None:
            raise RetrievalError(f"query runtime {query_runtime} needs a folder for the model export")
        self.query_encoder: QueryEncoder = query_encoder(embedder, query_runtime, folder=export_folder or Path())
        self._lock = threading.Lock()
        # Concurrent searches encode their queries outside the store lock, in batches as large as
        # the encoder gains from; identical queries in flight share one encode, and repeated
        # queries come from a cache.
        self._queries = QueryBatcher(self._encode_queries, max_batch=self.query_encoder.batch_limit,
                                     cache_size=QUERY_CACHE_SIZE, lanes=self.query_encoder.lanes)

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.query_encoder.encode(texts)

    def _query_vector(self, query: str) -> np.ndarray:
        return self._queries.vector(query)

    @property
    def meta(self) -> IndexMeta:
        """The index's description."""
        return self.store.meta

    def search(
        self,
        query: str,
        *,
        exclude_title: str | None = None,
        k: int = 15,
        mode: SearchMode = "hybrid",
        candidates: int = 50,
    ) -> list[Hit]:
        """The ``k`` best blocks for ``query``, never from the article ``exclude_title``."""
        if not query.strip():
            raise RetrievalError("the search query is empty")
        dense = self._query_vector(query) if mode != "bm25" else None
        with self._lock:
            found = self.store.search(
                dense=dense, text=query, exclude_title=exclude_title, k=k, mode=mode, candidates=candidates
            )
        return [Hit(block, score, rank) for rank, (block, score) in enumerate(found, start=1)]

    def refresh(self) -> bool:
        """Switch to the index's current version if a rebuild swapped one in since it was opened
        (a long-running server calls this; a batch run stays on one version). A new version
        built with another embedder is not taken: it is logged and the old one kept."""

        def same_embedder(meta: IndexMeta) -> bool:
            if meta.embedder_model == self.embedder.model_id and meta.dim == self.embedder.dim:
                return True
            log.warning("index %s was rebuilt with %s; keeping the version this process opened (%s)",
                        meta.name, meta.embedder_model, self.embedder.model_id)
            return False

        with self._lock:
            return self.store.refresh(same_embedder)

    def document(self, title: str) -> list[Block]:
        """Every block of the article ``title``, in reading order (a filtered read of the index)."""
        with self._lock:
            return self.store.blocks_of(title)

    def has_document(self, title: str) -> bool:
        """Whether the index holds any block of the article ``title``."""
        with self._lock:
            return self.store.count_title(title) > 0

    def close(self) -> None:
        """Release the index and its query encoder."""
        with self._lock:
            self.store.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_retriever(
    name: str,
    *,
    root: Path,
    embedder_spec: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    query_runtime: str = "auto",
) -> Retriever:
    """Open index ``name`` with the embedder it was built with (or check ``embedder_spec``).
    Query-model exports (``query_runtime`` auto or onnx) are kept under ``root/.query-models``."""
    store = open_index(name, root=root, url=url, api_key=api_key)
    try:
        return Retriever(store, load_embedder(embedder_spec or store.meta.embedder), query_runtime=query_runtime,
                         export_folder=Path(root) / EXPORT_FOLDER)
    except BaseException:
        store.close()
        raise


def build_index(
    blocks: list[Block],
    *,
    name: str,
    embedder: Embedder | str,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    batch_size: int = 256,
    show_progress: bool = True,
    replace: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    on_progress: Callable[[int, int], None] | None = None,
    corpus_digest: str = "",
    claims_of: str = "",
    claim_ids: Sequence[str] = (),
) -> BuildSummary:
    """Embed ``blocks`` and store them as index ``name`` (embedded under ``root``, or on the
    Qdrant server at ``url``). An existing index is an error unless ``replace``. A build that
    fails or is interrupted leaves no index behind; an embedded index being replaced stays
    searchable, unchanged, until the new one is complete and swapped in. Another build of the
    same embedded index is waited for (up to ``lock_timeout`` s). ``on_progress(done, total)``, when
    given, is told how many blocks are stored after each batch (instead of the progress bar);
    ``corpus_digest`` is recorded in the index's description (so a changed corpus file is noticed), and
    so are ``claims_of`` and ``claim_ids``, the benchmark file and claims whose passages it holds (so an
    evaluation of other claims is noticed)."""
    check_name(name)
    if not blocks:
        raise DatasetError("no blocks to index")
    sized = [part for block in blocks for part in split_oversize(block, MAX_BLOCK_CHARS)]
    split = len(sized) - len(blocks)
    blocks = sized
    repeated = [bid for bid, n in Counter(b.id for b in blocks).items() if n > 1]
    if repeated:
        raise DatasetError(f"{len(repeated)} block ids occur more than once (e.g. {repeated[0]!r}); ids must be unique")
    if isinstance(embedder, str):
        embedder = load_embedder(embedder)
    if any(m.name == name for m in list_indexes(root, url, api_key=api_key)):
        if not replace:
            raise RetrievalError(f"index {name} already exists; pass --replace to rebuild it")
        if url is not None:  # a server collection cannot be renamed: the old one goes first
            delete_index(name, root=root, url=url, api_key=api_key)
        # embedded: the new version is built beside the old one and swapped in by finalize
    meta = IndexMeta(name=name, embedder=embedder.name, embedder_model=embedder.model_id, dim=embedder.dim,
                     corpus_digest=corpus_digest, claims_of=claims_of, claim_ids=list(claim_ids),
                     languages=sorted({block.language for block in blocks if block.language}))
    started = time.monotonic()
    store = open_index(name, root=root, url=url, api_key=api_key, create_meta=meta, replace=replace,
                      lock_timeout=lock_timeout)
    try:
        with Progress(
            TextColumn(f"indexing {name}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            disable=not show_progress or on_progress is not None,
            transient=True,
        ) as progress:
            task = progress.add_task("blocks", total=len(blocks))
            if on_progress is not None:
                on_progress(0, len(blocks))
            for start in range(0, len(blocks), batch_size):
                batch = blocks[start : start + batch_size]
                store.upsert(batch, embedder.encode([b.embed_text() for b in batch]))
                progress.advance(task, len(batch))
                if on_progress is not None:
                    on_progress(start + len(batch), len(blocks))
        store.finalize()
        size = store.size_on_disk()
    except BaseException:
        store.close()  # an embedded store discards its unfinished version itself
        if url is not None:
            with suppress(RetrievalError):
                delete_index(name, root=root, url=url, api_key=api_key)
        raise
    store.close()
    seconds = time.monotonic() - started
    return BuildSummary(
        name=name,
        blocks=meta.blocks,
        documents=meta.documents,
        seconds=round(seconds, 3),
        blocks_per_s=round(len(blocks) / seconds, 1),
        size_on_disk=size,
        split=split,
    )


DEMO_LAYOUT = b"payload: corpus_order"
"""What a demo index's payload holds besides the blocks: a change rebuilds older demo indexes."""
MULTILINGUAL_DEMO = "demo-multilingual"
"""The demo corpus with the French and German articles of the multilingual demo, in one index."""


def _demo_files(name: str) -> list[Path]:
    return [demo_corpus_path(), demo_editions_path()] if name == MULTILINGUAL_DEMO else [demo_corpus_path()]


def demo_corpus_digest(name: str = "demo") -> str:
    """A digest of the bundled corpus of demo index ``name``: an index built from an older version of
    it is rebuilt."""
    return hashlib.sha256(b"".join(path.read_bytes() for path in _demo_files(name)) + DEMO_LAYOUT).hexdigest()[:16]


def demo_index_ready(root: Path, name: str = "demo") -> bool:
    """Whether the demo index ``name`` under ``root`` is built, complete and of today's demo corpus."""
    digest = demo_corpus_digest(name)
    return any(m.name == name and m.complete and m.corpus_digest == digest for m in list_indexes(root))


def ensure_demo_index(root: Path, embedder_spec: str | None = None, name: str = "demo",
                      on_progress: Callable[[int, int], None] | None = None) -> None:
    """Build the bundled demo corpus as index ``name`` under ``root`` unless it is already there
    (an unfinished one is rebuilt), in small batches so that its progress moves (``on_progress``:
    see :func:`build_index`). ``demo`` is the English demo (MiniLM unless ``embedder_spec``);
    ``demo-multilingual`` adds the French and German articles, linked to their English
    counterparts, with the offline multilingual embedder (e5-small) unless ``embedder_spec``."""
    existing = next((m for m in list_indexes(root) if m.name == name), None)
    digest = demo_corpus_digest(name)
    if existing is not None and existing.complete and existing.corpus_digest == digest:
        return
    blocks = [block for path in _demo_files(name) for block in read_corpus(path).blocks]
    if name == MULTILINGUAL_DEMO:
        blocks = linked_both_ways(blocks, "en")
    embedder_spec = embedder_spec or (MULTILINGUAL if name == MULTILINGUAL_DEMO else "minilm")
    try:
        build_index(blocks, name=name, embedder=embedder_spec, root=root, replace=existing is not None, batch_size=32,
                    on_progress=on_progress, corpus_digest=digest)
    except RetrievalError:
        # another process may have built it while this one waited for the build lock
        if not demo_index_ready(root, name):
            raise
