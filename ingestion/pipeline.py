"""The stages of a dump build, overlapped so the slowest one — the encoder, on a GPU machine — sets the pace.

    read + parse (+ BM25)  ──queue──▶  encode  ──queue──▶  store (upserts, deletes, ledger commits)
    main thread, with parsing          a thread (torch       a thread (the store's writes and the
    processes when there are any       releases the GIL)     ledger's commits stay in one order)

Pages are read in the main thread and converted to blocks in chunks — in parsing processes when
the build has any (their BM25 vectors are computed there too, so no vector work is left for the
encoder's process), otherwise inline. Converted blocks are grouped for the encoder (several
batches a call, so its length sorting pads little); each group carries the pages whose blocks it
completes. The encode thread turns groups into vectors; the store thread upserts them (with the
deletes a changed page needs, in order), flushes, and only then records the pages in the ledger.
Queues are bounded, so memory stays flat however large the dump. Each stage's busy time is
measured (``stage_seconds``), which is how a build shows where its time goes.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from qdrant_edge import SparseVector

from claire.indexes import sparse
from claire.domain import Block
from claire.ingestion.dumps.convert import convert_pages
from claire.ingestion.dumps.pages import DumpPage, PageResult, block_id
from claire.ingestion.encoding import BatchEncoder
from claire.indexes.store import IndexStore

CHUNK_PAGES = 16  # pages per task sent to a parsing process
COMMIT_SECONDS = 2.0  # how often stored pages are flushed and written to the ledger
ENCODE_GROUP = 8  # batches per encode call: the embedder sorts a call's passages by length, so a
# larger call pads less (measured here: one 256-passage batch a call ran 35% slower than one sorted call)
LEDGER_BATCH = 10_000  # pages held for the ledger at most (memory stays bounded through skipped stretches)
QUEUE_GROUPS = 3  # groups waiting between two stages (bounded memory)
END_OF_WORK = object()
"""What a stage passes on, and then stops, when there is no more work."""

SparseParts = list[tuple[list[int], list[float]]]


def _worker_setup(parent: int) -> None:
    """In each parsing process: leave Ctrl-C to the parent, and exit when the parent is gone
    (after ``kill -9`` nobody else would stop it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def parse_chunk(pages: list[DumpPage], max_words: int) -> tuple[list[PageResult], list[SparseParts], float, float]:
    """A chunk of pages converted, with each block's BM25 vector as (indices, values), and the
    seconds spent parsing and on BM25 (runs in a parsing process)."""
    started = time.perf_counter()
    results = convert_pages(pages, max_words)
    parsed = time.perf_counter()
    vectors = []
    for result in results:
        found = [sparse.document_vector(b.embed_text()) for b in result.blocks]
        vectors.append([(list(v.indices), list(v.values)) for v in found])
    return results, vectors, parsed - started, time.perf_counter() - parsed


@dataclass
class Group:
    """What one encode call handles: blocks with their BM25 vectors, the block ids to delete first
    (a changed page's surplus blocks), the pages it completes and the unchanged pages to mark seen."""

    blocks: list[Block] = field(default_factory=list)
    sparse: list[SparseVector] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    pages: list[PageResult] = field(default_factory=list)
    seen: list[int] = field(default_factory=list)
    vectors: Any = None


class PipelineStage(threading.Thread):
    """A pipeline stage: takes groups from ``inbox``, works on each, hands it to ``outbox``; a
    failure is kept for the main thread and stops the stage."""

    def __init__(self, name: str, work: Any, inbox: queue.Queue, outbox: queue.Queue | None) -> None:
        super().__init__(name=name, daemon=True)
        self.work, self.inbox, self.outbox = work, inbox, outbox
        self.busy = 0.0
        self.error: BaseException | None = None
        self.stopping = False

    def run(self) -> None:
        while True:
            item = self.inbox.get()
            if item is END_OF_WORK or self.stopping:
                if self.outbox is not None:
                    self.outbox.put(END_OF_WORK)
                if item is not END_OF_WORK:  # stopped early: keep taking so the stage before can end too
                    self._drain()
                return
            try:
                started = time.perf_counter()
                self.work(item)
                self.busy += time.perf_counter() - started
            except BaseException as error:  # handed to the main thread, which stops the build
                self.error = error
                if self.outbox is not None:
                    self.outbox.put(END_OF_WORK)
                self._drain()
                return
            if self.outbox is not None:
                self.outbox.put(item)

    def _drain(self) -> None:
        """Keep taking (and dropping) work so an upstream stage blocked on a full queue can end."""
        while self.inbox.get() is not END_OF_WORK:
            pass


class BuildPipeline:
    """Read → parse (+ BM25) → encode → store → ledger, for one build or update run."""

    def __init__(self, store: IndexStore, ledger: Any, encoder: BatchEncoder, options: Any, generation: int,
                 summary: Any) -> None:
        self.store, self.ledger, self.encoder, self.options = store, ledger, encoder, options
        self.language: str | None = None  # the edition of the pages stored (noted in the ledger)
        self.generation, self.summary = generation, summary
        self.pool = (
            ProcessPoolExecutor(options.workers, mp_context=get_context("spawn"), initializer=_worker_setup,
                                initargs=(os.getpid(),))
            if options.workers > 0 else None
        )
        self.inflight: deque[tuple[Future | tuple, list[tuple[int, int] | None]]] = deque()
        self.chunk: list[DumpPage] = []
        self.chunk_prev: list[tuple[int, int] | None] = []
        self.group = Group()
        self.group_limit = max(options.batch_size * ENCODE_GROUP, 1)
        self.parse_seconds = self.sparse_seconds = 0.0
        # the store thread's ledger batch: pages stored but not yet committed
        self.done: list[PageResult] = []
        self.seen: list[int] = []
        self.last_commit = time.monotonic()
        self.to_encode: queue.Queue = queue.Queue(QUEUE_GROUPS)
        self.to_store: queue.Queue = queue.Queue(QUEUE_GROUPS)
        self.encoding = PipelineStage("claire-encode", self._encode, self.to_encode, self.to_store)
        self.storing = PipelineStage("claire-store", self._store, self.to_store, None)
        self.encoding.start()
        self.storing.start()

    # -- the main thread: read, parse, group ------------------------------------------------------
    def feed(self, page: DumpPage) -> None:
        """One page of the dump: skipped when the ledger holds it at this revision, else parsed."""
        prev = self.ledger.page(page.page_id)
        if prev is not None and prev[0] == page.revision_id:
            self.summary.unchanged += 1
            self.group.seen.append(page.page_id)
            if len(self.group.seen) >= LEDGER_BATCH:  # long unchanged stretches: keep the list short
                self._send()
            return
        self.chunk.append(page)
        self.chunk_prev.append(prev)
        if len(self.chunk) >= CHUNK_PAGES:
            self._submit()

    def _submit(self) -> None:
        if not self.chunk:
            return
        pages, prevs = self.chunk, self.chunk_prev
        self.chunk, self.chunk_prev = [], []
        work = (self.pool.submit(parse_chunk, pages, self.options.max_words) if self.pool
                else parse_chunk(pages, self.options.max_words))
        self.inflight.append((work, prevs))
        while len(self.inflight) > 2 * max(self.options.workers, 1):
            self._take()

    def _take(self) -> None:
        work, prevs = self.inflight.popleft()
        results, vectors, parse_s, sparse_s = work.result() if isinstance(work, Future) else work
        self.parse_seconds += parse_s
        self.sparse_seconds += sparse_s
        for result, parts, prev in zip(results, vectors, prevs, strict=True):
            self._handle(result, parts, prev)

    def _handle(self, result: PageResult, parts: SparseParts, prev: tuple[int, int] | None) -> None:
        if prev is None:
            self.summary.new += 1
        else:
            self.summary.changed += 1
            if prev[1] > len(result.blocks):  # the rest are overwritten by the new revision's blocks
                self.group.deletes += [block_id(result.page_id, n, result.language)
                                       for n in range(len(result.blocks), prev[1])]
        if result.language and result.language != self.language:  # an update deletes gone pages' blocks by their ids
            self.language = result.language
            self.ledger.set(language=result.language)
        self.group.blocks += result.blocks
        self.group.sparse += [SparseVector(indices=i, values=v) for i, v in parts]
        self.group.pages.append(result)
        if len(self.group.blocks) >= self.group_limit or len(self.group.pages) >= LEDGER_BATCH:
            self._send()

    def _send(self) -> None:
        group, self.group = self.group, Group()
        self._check()
        while True:  # wait for room, but notice a stage that failed meanwhile
            try:
                self.to_encode.put(group, timeout=0.5)
                return
            except queue.Full:
                self._check()

    def _check(self) -> None:
        for stage in (self.encoding, self.storing):
            if stage.error is not None:
                raise stage.error

    # -- the stages --------------------------------------------------------------------------------
    def _encode(self, group: Group) -> None:
        if group.blocks:
            group.vectors = self.encoder.encode([b.embed_text() for b in group.blocks])

    def _store(self, group: Group) -> None:
        if group.deletes:
            self.store.delete(group.deletes)
        if group.blocks:
            self.store.upsert(group.blocks, group.vectors, sparse=group.sparse)
            self.summary.blocks_written += len(group.blocks)
        self.done += group.pages
        self.seen += group.seen
        if time.monotonic() - self.last_commit >= COMMIT_SECONDS:
            self._commit()

    def _commit(self) -> None:
        """Flush the store, then record what it holds in the ledger (the store thread's, or the
        main thread's once the stages have stopped)."""
        if not self.done and not self.seen:
            return
        self.store.flush()
        last = f"{self.done[-1].page_id} {self.done[-1].title}" if self.done else None
        self.ledger.commit(self.done, self.seen, self.generation, last)
        self.done, self.seen = [], []
        self.last_commit = time.monotonic()

    # -- the end -----------------------------------------------------------------------------------
    def drain(self) -> None:
        """Finish every page read so far and commit it (a stage that failed meanwhile stops the
        build, with what was stored before it committed)."""
        try:
            self._submit()
            while self.inflight:
                self._take()
            self._send()
        except BaseException:
            self.abandon()
            raise
        self._stop()
        failed = next((stage.error for stage in (self.encoding, self.storing) if stage.error is not None), None)
        if failed is not None:
            self.abandon()
            raise failed
        self._commit()
        self._account()

    def abandon(self) -> None:
        """Stop at once (Ctrl-C, a bad dump): commit what is already stored, drop the rest."""
        self.encoding.stopping = self.storing.stopping = True
        self._stop()
        try:
            self._commit()
        except Exception:  # the interruption is what the caller reports
            pass
        self._account()
        self.close(cancel=True)

    def _stop(self) -> None:
        while self.encoding.is_alive():  # the end mark, once there is room (the stage keeps taking)
            try:
                self.to_encode.put(END_OF_WORK, timeout=0.2)
                break
            except queue.Full:
                continue
        self.encoding.join()
        self.storing.join()

    def _account(self) -> None:
        seconds = self.summary.stage_seconds
        seconds["parse"] = seconds.get("parse", 0.0) + self.parse_seconds
        seconds["sparse"] = seconds.get("sparse", 0.0) + self.sparse_seconds
        seconds["encode"] = seconds.get("encode", 0.0) + self.encoding.busy
        seconds["upsert"] = seconds.get("upsert", 0.0) + self.storing.busy
        self.summary.encode_seconds += self.encoding.busy
        self.parse_seconds = self.sparse_seconds = self.encoding.busy = self.storing.busy = 0.0

    def close(self, cancel: bool = False) -> None:
        """Shut the parsing processes down. After Ctrl-C the queued work is dropped but the batches
        being parsed are waited for (they are short): leaving the pool's manager thread running
        into interpreter exit races CPython 3.11's exit hook and prints a traceback."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=cancel)
            self.pool = None

