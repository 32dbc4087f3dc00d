"""Build and update an index from a Wikipedia dump: streamed, parsed on all cores, resumable.

The dump is read as a stream (:mod:`claire.ingestion.dumps.readers`) and flows through overlapping
stages (:mod:`claire.ingestion.pipeline`): parsing (in a process pool, BM25 vectors included),
encoding (:mod:`claire.ingestion.encoding`) and storing run side by side with bounded queues between
them, so memory is bounded by the chunk and batch sizes, not by the dump, and the slowest stage
sets the pace. A rich progress bar shows pages/s, blocks/s and the ETA (from the bytes read).

Resume and updates rest on two things. Block ids come from the page id and the block's position
(``{page_id}-{n}``), so storing a page again overwrites its blocks rather than adding copies.
And a small SQLite ledger beside the index (``<root>/.ingest/<name>.sqlite``) records every page
whose blocks are durably stored — page id, revision id, block count, skip reason — committed
after the store is flushed. Running the same build again after Ctrl-C, ``kill -9`` or a dump
error skips the pages the ledger holds at the same revision and continues. An update reads a
newer dump the same way: unchanged revisions are skipped without parsing, changed ones are
re-indexed (surplus old blocks deleted), new ones added, and pages the newer dump no longer has
are deleted at the end.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from claire.errors import ClaireError, ConfigError, RetrievalError
from claire.ingestion.dumps.pages import MAX_WORDS, SKIP_REASONS, PageResult, block_id
from claire.ingestion.dumps.readers import DumpReader
from claire.indexes.embedders import load_embedder
from claire.ingestion.encoding import BatchEncoder, resolve_device
from claire.indexes.edge_store import WorkingEdgeStore
from claire.indexes.index_meta import IndexMeta, check_name
from claire.ingestion.pipeline import BuildPipeline
from claire.indexes.server_store import ServerOptions, ServerStore
from claire.indexes.store import IndexStore



def default_workers(device: str = "auto") -> int:
    """Parsing processes to start when none are asked for. Encoding on a GPU, parsing is the
    bottleneck: every core but one parses. On a CPU the encoder already uses every core and
    parsing costs ~1% of encoding, so a small machine parses inline (a pool would only compete
    with the encoder's threads) and a larger one gives parsing a quarter of its cores."""
    cores = os.cpu_count() or 1
    if resolve_device(device) == "cuda":
        return max(1, cores - 1)
    return 0 if cores <= 2 else cores // 4


def default_batch_size(device: str = "auto") -> int:
    """Passages per encode batch: 1,024 on a GPU (fewer, fuller kernel launches; the gain over 256
    is not measured warm against warm here: no GPU was lent), 256 on a CPU."""
    return 1024 if resolve_device(device) == "cuda" else 256


@dataclass
class IngestOptions:
    """How a dump build runs."""

    workers: int = 0  # parsing processes; 0 parses in this process
    batch_size: int = 256  # passages per encode call
    limit_pages: int | None = None  # stop after this many pages of the dump (all namespaces)
    device: str = "auto"
    encode_processes: int = 1
    max_words: int = MAX_WORDS
    max_seq_length: int | None = None  # cap on tokens embedded per passage (None: the model's own)
    show_progress: bool = True
    server: ServerOptions = field(default_factory=ServerOptions)
    int8: bool = False  # an embedded index created by the build keeps int8 copies of its dense vectors
    language: str | None = None  # the edition's language when the dump does not name it
    langlinks: dict[int, dict[str, str]] | None = None  # page id -> its counterparts (the langlinks table)


@dataclass
class IngestSummary:
    """What a build or update did (this run) and what the index now holds."""

    name: str
    mode: str  # build | update
    resumed: bool = False
    pages_read: int = 0
    new: int = 0  # pages indexed for the first time (articles and skipped pages alike)
    changed: int = 0
    unchanged: int = 0  # same revision as already indexed (an update's untouched pages, a resume's done pages)
    removed: int = 0
    blocks_written: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # over the whole index: reason -> pages
    articles: int = 0
    blocks: int = 0  # in the index after the run
    seconds: float = 0.0
    encode_seconds: float = 0.0
    device: str = "cpu"
    stage_seconds: dict[str, float] = field(default_factory=dict)  # busy time: parse, sparse, encode, upsert, finalize

    @property
    def pages_per_s(self) -> float:
        """Pages read per second in this run."""
        return self.pages_read / self.seconds if self.seconds else 0.0

    @property
    def blocks_per_s(self) -> float:
        """Blocks written per second in this run."""
        return self.blocks_written / self.seconds if self.seconds else 0.0


# --- the ledger ------------------------------------------------------------------------------


def ledger_path(root: Path, name: str, url: str | None = None) -> Path:
    """Where the ledger of index ``name`` lives (local even for a server index)."""
    suffix = "" if url is None else "@" + hashlib.sha1(url.encode("utf-8")).hexdigest()[:10]
    return Path(root) / ".ingest" / f"{name}{suffix}.sqlite"


class Ledger:
    """The pages an index holds: ``pages(page_id, revision_id, title, blocks, skipped, seen)``
    and a few ``info`` values (phase, generation, dump)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, check_same_thread=False)  # the build's store thread commits
        self._lock = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS pages (page_id INTEGER PRIMARY KEY, revision_id INTEGER NOT NULL, "
            "title TEXT NOT NULL, blocks INTEGER NOT NULL, skipped TEXT, seen INTEGER NOT NULL)"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.db.commit()

    def get(self, key: str, default: str | None = None) -> str | None:
        """The revision indexed for a page (None when the page is not in the index)."""
        row = self.db.execute("SELECT value FROM info WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set(self, **values: object) -> None:
        """Record the revision indexed for a page."""
        self.db.executemany("INSERT OR REPLACE INTO info VALUES (?, ?)", [(k, str(v)) for k, v in values.items()])
        self.db.commit()

    def page(self, page_id: int) -> tuple[int, int] | None:
        """(revision id, block count) of a page already stored, or None."""
        with self._lock:
            return self.db.execute("SELECT revision_id, blocks FROM pages WHERE page_id = ?", (page_id,)).fetchone()

    def commit(self, results: list[PageResult], seen: list[int], generation: int, last: str | None) -> None:
        """Make the recorded revisions durable."""
        with self._lock, self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?)",
                [(r.page_id, r.revision_id, r.title, len(r.blocks), r.skipped, generation) for r in results],
            )
            self.db.executemany("UPDATE pages SET seen = ? WHERE page_id = ?", [(generation, p) for p in seen])
            if last is not None:
                self.db.execute("INSERT OR REPLACE INTO info VALUES ('last_page', ?)", (last,))

    def stale(self, generation: int) -> Iterator[tuple[int, int]]:
        """(page id, block count) of pages not seen in ``generation``."""
        yield from self.db.execute("SELECT page_id, blocks FROM pages WHERE seen < ?", (generation,)).fetchall()

    def forget(self, page_ids: list[int]) -> None:
        """Forget the pages no longer in the dump."""
        with self.db:
            self.db.executemany("DELETE FROM pages WHERE page_id = ?", [(p,) for p in page_ids])

    def counts(self) -> tuple[int, dict[str, int]]:
        """(articles with blocks, {skip reason: pages})."""
        rows = dict(self.db.execute("SELECT coalesce(skipped, ''), count(*) FROM pages GROUP BY 1").fetchall())
        return rows.pop("", 0), {reason: rows.get(reason, 0) for reason in SKIP_REASONS}

    def close(self) -> None:
        """Close the ledger's database."""
        self.db.close()


# --- the run ----------------------------------------------------------------------------------


def _progress(options: IngestOptions, reader: DumpReader) -> Progress:
    console = Console(stderr=True)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[pages]:,} pages ({task.fields[pps]:.0f}/s) · {task.fields[blocks]:,} blocks "
                   "({task.fields[bps]:.0f}/s)"),
        TimeRemainingColumn(),
        console=console,
        disable=not options.show_progress or not console.is_terminal,
        transient=True,
    )


def _run(reader: DumpReader, pipeline: BuildPipeline, options: IngestOptions, summary: IngestSummary, label: str) -> None:
    started = time.monotonic()
    limit = options.limit_pages
    with _progress(options, reader) as progress:
        task = progress.add_task(label, total=limit or reader.total_bytes or None, pages=0, pps=0.0, blocks=0, bps=0.0)
        shown = 0.0
        try:
            for page in reader:
                if options.language and not page.language:
                    page.language = options.language
                if options.langlinks is not None:
                    page.counterparts = options.langlinks.get(page.page_id) or None
                pipeline.feed(page)
                summary.pages_read += 1
                now = time.monotonic()
                if now - shown > 0.5:
                    shown, elapsed = now, max(now - started, 1e-9)
                    progress.update(task, completed=summary.pages_read if limit else reader.bytes_read,
                                    pages=summary.pages_read, pps=summary.pages_read / elapsed,
                                    blocks=summary.blocks_written, bps=summary.blocks_written / elapsed)
                if limit is not None and summary.pages_read >= limit:
                    break
        except ClaireError:
            pipeline.drain()  # keep every page read before the bad input: the same command resumes after the fix
            raise
        except BaseException:
            pipeline.abandon()
            raise
        pipeline.drain()


# --- entry points --------------------------------------------------------------------------


def open_ingest_store(name: str, root: Path, url: str | None, api_key: str | None, options: IngestOptions) -> IndexStore:
    """The store a build or update writes: a Qdrant server collection, or a private working copy
    of an embedded index that ``finalize`` publishes."""
    check_name(name)
    if url:
        return ServerStore(url, api_key=api_key, collection=name, options=options.server)
    # builds and updates write a private working copy beside the ledger; readers see the index
    # only when it is published complete (a new version, swapped in atomically)
    return WorkingEdgeStore(Path(root) / name, ledger_path(root, name, url).with_suffix(".work"), int8=options.int8)


def _delete_everything(store: IndexStore, name: str, root: Path, url: str | None, api_key: str | None, ledger: Path) -> None:
    from claire.indexes.catalog import delete_index

    if isinstance(store, WorkingEdgeStore):
        store.discard()
    store.close()
    with suppress(RetrievalError):
        delete_index(name, root=root, url=url, api_key=api_key)
    for file in (ledger, ledger.with_name(ledger.name + "-wal"), ledger.with_name(ledger.name + "-shm")):
        file.unlink(missing_ok=True)


def build_from_dump(
    dump: str | Path,
    *,
    name: str,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    embedder: str = "minilm",
    replace: bool = False,
    options: IngestOptions | None = None,
) -> IngestSummary:
    """Build index ``name`` from a dump, or resume an interrupted build of it."""
    options = options or IngestOptions()
    reader = DumpReader(dump)  # checks the file (and below, the device) before anything is created
    resolve_device(options.device)
    ledger_file = ledger_path(root, name, url)
    store = open_ingest_store(name, root, url, api_key, options)
    summary = IngestSummary(name=name, mode="build")
    empty_build = False  # a new build that failed before storing any page leaves nothing behind
    try:
        if store.exists and replace:
            _delete_everything(store, name, root, url, api_key, ledger_file)
            store = open_ingest_store(name, root, url, api_key, options)
        if store.exists:
            if store.meta.complete:
                raise RetrievalError(
                    f"index {name} already exists; update it with `claire index update {name} --from-dump FILE` "
                    "or rebuild it with --replace"
                )
            if not ledger_file.is_file():
                raise RetrievalError(f"index {name} is an unfinished build that was not made from a dump; rebuild it with --replace")
            summary.resumed = True
        else:
            ledger_file.unlink(missing_ok=True)  # a ledger without its index is stale
            model = load_embedder(embedder)
            store.create(IndexMeta(name=name, embedder=model.name, embedder_model=model.model_id, dim=model.dim))
        with closing(Ledger(ledger_file)) as ledger:
            if not summary.resumed:
                ledger.set(phase="building", generation=1, dump=str(Path(dump).resolve()), index_created=store.meta.created_at)
            try:
                ingest_pages(reader, store, ledger, options, summary, generation=1, remove_missing=False,
                             label=f"{'resuming' if summary.resumed else 'building'} {name}")
            except BaseException:
                if not summary.resumed and ledger.counts() == (0, {reason: 0 for reason in SKIP_REASONS}):
                    empty_build = True  # nothing was stored: nothing worth keeping for a resume
                raise
            ledger.set(phase="built")
    except BaseException:
        if empty_build and isinstance(store, WorkingEdgeStore):  # a server collection keeps its ledger: it resumes
            store.discard()
            for file in (ledger_file, ledger_file.with_name(ledger_file.name + "-wal"),
                         ledger_file.with_name(ledger_file.name + "-shm")):
                file.unlink(missing_ok=True)
        raise
    finally:
        store.close()
    return summary


def update_from_dump(
    dump: str | Path,
    *,
    name: str,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    options: IngestOptions | None = None,
) -> IngestSummary:
    """Bring index ``name`` (built from an older dump) up to date with ``dump``."""
    options = options or IngestOptions()
    reader = DumpReader(dump)
    resolve_device(options.device)
    ledger_file = ledger_path(root, name, url)
    store = open_ingest_store(name, root, url, api_key, options)
    summary = IngestSummary(name=name, mode="update")
    try:
        if not store.exists:
            raise RetrievalError(f"no index named {name} in {url or root}; build it first with --from-dump")
        if not ledger_file.is_file():
            raise RetrievalError(f"index {name} was not built from a dump, so it cannot be updated from one")
        with closing(Ledger(ledger_file)) as ledger:
            if ledger.get("index_created") != store.meta.created_at:  # a ledger left by an index deleted since
                raise RetrievalError(f"index {name} was not built from a dump (or was rebuilt since), so it cannot be "
                                     "updated from one; rebuild it with --from-dump --replace")
            phase, generation = ledger.get("phase"), int(ledger.get("generation", "1") or 1)
            if phase == "building":
                raise RetrievalError(f"the build of index {name} has not finished; run the same build command again first")
            if phase == "updating":
                summary.resumed = True
            else:
                generation += 1
                ledger.set(phase="updating", generation=generation, dump=str(Path(dump).resolve()))
            ingest_pages(reader, store, ledger, options, summary, generation=generation, remove_missing=True,
                    label=f"updating {name}")
            ledger.set(phase="built")
    finally:
        store.close()
    return summary


def ingest_pages(reader: DumpReader, store: IndexStore, ledger: Ledger, options: IngestOptions, summary: IngestSummary,
                 *, generation: int, remove_missing: bool, label: str) -> None:
    """Store the pages ``reader`` yields (unchanged revisions skipped), then — when
    ``remove_missing`` and the reader was read to its end — delete the pages it no longer has, and
    publish the index."""
    if options.batch_size < 1 or options.workers < 0:
        raise ConfigError("batch size must be at least 1 and workers at least 0")
    started = time.monotonic()
    embedder = load_embedder(store.meta.embedder)
    if embedder.model_id != store.meta.embedder_model:
        raise RetrievalError(f"index {store.meta.name} records embedder {store.meta.embedder_model}, "
                             f"but {store.meta.embedder} now loads {embedder.model_id}")
    encoder = BatchEncoder(embedder, device=options.device, processes=options.encode_processes,
                           batch_size=options.batch_size, max_seq_length=options.max_seq_length)
    summary.device = encoder.device
    pipeline = BuildPipeline(store, ledger, encoder, options, generation, summary)
    try:
        _run(reader, pipeline, options, summary, label)
    finally:
        pipeline.close()
        encoder.close()
    complete = options.limit_pages is None or summary.pages_read < options.limit_pages
    if remove_missing and complete:  # pages the newer dump no longer has (only known after reading all of it)
        stale = list(ledger.stale(generation))
        for start in range(0, len(stale), 1000):
            part = stale[start : start + 1000]
            store.delete([block_id(page, n, ledger.get("language")) for page, blocks in part for n in range(blocks)])
            store.flush()
            ledger.forget([page for page, _ in part])
        summary.removed = len(stale)
    language = ledger.get("language")
    if language and language not in store.meta.languages:
        store.meta.languages = sorted([*store.meta.languages, language])
    started_finalize = time.monotonic()
    store.finalize()
    summary.stage_seconds["finalize"] = round(time.monotonic() - started_finalize, 3)
    summary.articles, summary.skipped = ledger.counts()
    summary.blocks = store.meta.blocks
    summary.seconds = round(time.monotonic() - started, 3)


def skip_counts_line(summary: IngestSummary) -> str:
    """``redirects 3, disambiguation 1, …`` for the CLI summary."""
    return ", ".join(f"{reason} {count:,}" for reason, count in Counter(summary.skipped).items())


def export_corpus(dump: str | Path, out: str | Path, options: IngestOptions | None = None, *,
                  langlinks_api: str | None = None, link_languages: list[str] | None = None) -> tuple[int, int]:
    """A dump's articles written as corpus JSONL (one block a line, with its language and its
    counterparts), for an index that holds several editions: export each edition's dump, then
    build one index from the files together (``claire index build``), which links the editions
    both ways. The counterparts come from the langlinks table (``options.langlinks``) or, with
    ``langlinks_api``, from that wiki's Action API (``prop=langlinks``, fifty articles a request).
    Returns (pages read, blocks written)."""
    import asyncio

    from claire.ingestion.dumps.convert import convert_page
    from claire.livewiki.mediawiki import MediaWikiClient

    options = options or IngestOptions()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pages = blocks = 0
    partial = out.with_name(out.name + ".partial")
    waiting: list[PageResult] = []
    with asyncio.Runner() as runner, partial.open("w", encoding="utf-8") as stream:
        client = MediaWikiClient() if langlinks_api else None

        def write(results: list[PageResult]) -> None:
            links: dict[str, dict[str, str]] = {}
            if client is not None and results:
                links = runner.run(client.langlinks(langlinks_api, [r.title for r in results], languages=link_languages))
            for result in results:
                for block in result.blocks:
                    if result.title in links and links[result.title]:
                        block = block.model_copy(update={"counterparts": links[result.title]})
                    stream.write(block.model_dump_json(exclude_none=True) + "\n")

        try:
            for page in DumpReader(dump):
                pages += 1
                if options.language and not page.language:
                    page.language = options.language
                if options.langlinks is not None:
                    page.counterparts = options.langlinks.get(page.page_id) or None
                result = convert_page(page, options.max_words)
                if result.blocks:
                    waiting.append(result)
                    blocks += len(result.blocks)
                if len(waiting) >= 50:
                    write(waiting)
                    waiting = []
                if options.limit_pages is not None and pages >= options.limit_pages:
                    break
            write(waiting)
        except BaseException:
            stream.close()
            partial.unlink(missing_ok=True)  # nothing half-written is left beside the output
            raise
        finally:
            if client is not None:
                runner.run(client.aclose())
    partial.replace(out)
    return pages, blocks
