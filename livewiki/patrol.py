"""The patrol: new edits of a live wiki checked as they happen, flagged facts queued for editors.

:class:`Patrol` reads change events (the EventStreams ``recentchange`` stream, or a recording),
keeps what its :class:`~claire.livewiki.recentchanges.ChangeFilter` asks for, and turns each kept
edit into a ``patrol`` job of the web app's store, under the id ``WIKI:REVISION`` — so an edit
delivered twice is one job. Only once the job is stored is the event's position saved: killed at
any moment, a restarted patrol goes on after the last saved event, re-delivered edits are
recognised, and queued ones are picked up, so no edit is lost or checked twice.

Each edit (at most ``edits_in_flight`` at once) fetches its old and new revision over the
MediaWiki Action API, finds the sentences the edit added or changed (:mod:`~claire.livewiki.edit_diff`),
extracts their atomic facts and checks each with the configured system — through the same
:class:`~claire.jobs.runner.JobRunner` as the web app's scans, so the LLM concurrency, cache, retries
and budget are shared — against the index without the edited article (its title is the facts'
context). The new revision then waits in the store until it is stored in the index (an index
built from a dump; see :mod:`claire.ingestion.live_update`), a batch every ``index_every`` seconds,
so later checks see the edit. :class:`PatrolStats` counts what happened, for the live line.

Nothing one event or one edit holds stops the patrol: an event that cannot be read is counted as
bad and its position saved; an edit's work is bounded (a revision is read up to Wikipedia's page
size limit, at most ``watch.max_edit_chars`` of the text it changed and ``watch.max_facts_per_edit``
facts are checked, and what was left out is noted with the edit); an edit whose wiki API or LLM
endpoint kept failing goes back to the queue (with its facts that failed) and is tried again
later (``watch.retry_wait``, doubling; once tried again ``watch.retry_tries`` times it ends as failed,
with its reason), while one the API refuses for good ends as an error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from claire.config import Config
from claire.domain import recorded_outcome
from claire.errors import ClaireError, ConfigError, LLMUnavailable, redact
from claire.ingestion.dumps.pages import DumpPage
from claire.ingestion.live_update import can_take_edits, update_pages
from claire.jobs.runner import JobRunner
from claire.jobs.store import JobStore
from claire.livewiki.edit_diff import changed_passages, page_blocks
from claire.livewiki.mediawiki import USER_AGENT, MediaWikiClient, WikiUnavailable
from claire.livewiki.recentchanges import (
    Change, ChangeFilter, describe_event, parse_change, pause, replay_changes, replay_position, stream_changes,
    without_credentials,
)
from claire.jobs.scan import extract_claims

log = logging.getLogger(__name__)

MAX_REVISION_CHARS = 2_097_152  # Wikimedia's page size limit (2,048 KiB; a page has no more characters than bytes)
MAX_RETRY_WAIT = 3600.0  # seconds: the longest wait before an edit whose wiki API failed is tried again


@dataclass
class PatrolStats:
    """What the patrol has done since it started (and the lag behind the stream)."""

    seen: int = 0  # events read
    kept: int = 0  # edits the filter kept (new ones)
    repeated: int = 0  # edits delivered again (already stored)
    left_aside: int = 0  # events the filter left aside
    bad: int = 0  # events that could not be read
    checked: int = 0  # edits checked to the end
    skipped: int = 0  # kept edits with nothing to check (revision gone, no changed sentences, ...)
    failed: int = 0  # edits whose check failed
    requeued: int = 0  # edits put back in the queue because their wiki's API or the LLM endpoint kept failing
    cut: int = 0  # edits only part of which was checked (watch.max_edit_chars, watch.max_facts_per_edit)
    facts: int = 0  # facts checked
    flagged: int = 0  # facts found inconsistent
    indexed: int = 0  # edited pages stored in the index
    lag_s: float | None = None  # now minus the newest event's time
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))  # event to last fact, seconds (latest)
    flagged_edits: list[str] = field(default_factory=list)  # the jobs (edits) checked in this run with a flagged fact

    def to_dict(self) -> dict[str, Any]:
        """The counts as plain data (latencies summarised)."""
        return {key: value for key, value in asdict(self).items() if key not in ("latencies", "flagged_edits")}


@dataclass
class ChangeSource:
    """Where the events come from: the live stream at ``url``, or a recording ``replay`` (JSONL).
    ``user_agent`` is sent to the stream and the wiki's API."""

    url: str | None = None
    replay: Path | None = None
    user_agent: str = USER_AGENT

    def __post_init__(self) -> None:
        if self.replay and not Path(self.replay).is_file():
            raise ConfigError(f"--replay {self.replay}: no such file")
        if not self.replay and not self.url:
            raise ConfigError("the patrol needs an event stream (watch.stream_url / --stream-url) or --replay FILE")

    @property
    def key(self) -> str:
        """The name its saved position is kept under (a stream's URL without its credentials)."""
        return f"replay:{Path(self.replay).resolve()}" if self.replay else f"stream:{without_credentials(self.url or '')}"

    @property
    def older_key(self) -> str | None:
        """The name an earlier release kept this stream's position under, when it differs (it
        held the URL's credentials)."""
        key = f"stream:{self.url}"
        return key if not self.replay and key != self.key else None

    def events(self, position: str | None, stop: Callable[[], bool]) -> AsyncIterator[tuple[str | None, str]]:
        """``(position, JSON text)`` of the events after ``position``."""
        if self.replay:
            return replay_changes(Path(self.replay), after=replay_position(position))
        return stream_changes(self.url or "", last_event_id=position, user_agent=self.user_agent, stop=stop)


@dataclass
class LeftOut:
    """What of one edit was not checked: the revision's text past Wikimedia's page size limit,
    the changed text past ``watch.max_edit_chars`` (``changed_chars`` were changed, ``read_chars``
    of them read) and the facts past ``watch.max_facts_per_edit``."""

    revision_chars: int = 0
    changed_chars: int = 0
    read_chars: int = 0
    facts: int = 0

    def __bool__(self) -> bool:
        return bool(self.revision_chars or self.changed_chars > self.read_chars or self.facts)

    def as_note(self, max_facts: int) -> dict[str, Any]:
        """The note stored with the edit (and served by ``GET /api/patrol``): the counts and one line."""
        parts = []
        if self.changed_chars > self.read_chars:
            parts.append(f"{self.read_chars:,} of the {self.changed_chars:,} characters it changed were read")
        if self.facts:
            parts.append(f"{self.facts:,} fact(s) past the first {max_facts:,} were not checked")
        if self.revision_chars:
            parts.append(f"the last {self.revision_chars:,} characters of its revision (past Wikimedia's page size "
                         "limit) were not read")
        return {**asdict(self), "note": "only part of this edit was checked: " + "; ".join(parts)}


class Patrol:
    """Checks a wiki's new edits against the index and records the results in the store."""

    def __init__(self, config: Config, store: JobStore, runner: JobRunner, source: ChangeSource, *,
                 filters: ChangeFilter | None = None, categories: list[str] | None = None, api_url: str | None = None,
                 edits_in_flight: int = 4, index_every: float = 30.0, wiki: MediaWikiClient | None = None,
                 on_progress: Callable[[PatrolStats], None] | None = None):
        self.config = config
        self.store = store
        self.runner = runner
        self.source = source
        self.filters = filters or ChangeFilter()
        self.categories = [c.removeprefix("Category:") for c in categories or []]
        self.api_url = api_url
        self.edits = asyncio.Semaphore(max(edits_in_flight, 1))  # taken before an edit's task starts
        watch = config.watch
        self.max_edit_chars, self.max_facts, self.retry_wait = watch.max_edit_chars, watch.max_facts_per_edit, watch.retry_wait
        self.retry_tries = watch.retry_tries
        self.index_every = index_every
        self.wiki = wiki or MediaWikiClient(user_agent=source.user_agent)
        self.on_progress = on_progress
        self.stats = PatrolStats()
        self._stopping = False
        self._reader: asyncio.Task | None = None  # reads the events (a stop cancels it)
        self._tasks: set[asyncio.Task] = set()
        self._waiting: set[asyncio.Task] = set()  # edits waiting to be tried again
        retrieval = config.retrieval
        # an index holds one wiki's pages (block ids are page ids): edits are stored in it only when
        # the patrol keeps a single wiki's changes
        self._indexable = (len(self.filters.wikis) == 1 and retrieval.backend == "qdrant"
                           and can_take_edits(retrieval.index, retrieval.index_root(), retrieval.url))
        self._last_indexed = time.monotonic()

    def stop(self) -> None:
        """Stop reading events at once, even from a quiet stream (the edits in flight are finished;
        queued ones wait in the store). A second stop does not wait for the edits in flight either:
        they go back to the queue, to be resumed by the next run."""
        if self._stopping:
            for task in list(self._tasks):
                task.cancel()
        self._stopping = True
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()

    @property
    def indexable(self) -> bool:
        """Whether edited pages are stored in the index (it was built from a dump)."""
        return self._indexable

    # -- the loop --------------------------------------------------------------------------------
    async def run(self, *, max_events: int | None = None) -> PatrolStats:
        """Read events until stopped (or ``max_events`` read, or a recording's end), checking kept
        edits as they come, after the edits an earlier run left queued (each tried at once); returns
        the counts. A stop takes effect at once, even while the stream is quiet: the reading is
        cancelled, the edits in flight are finished (a second stop puts them back in the queue)."""
        lock = FileLock(f"{self.store.path}.patrol.lock")
        try:  # one patrol per store: a second would check every edit again and overwrite the first's rows
            lock.acquire(timeout=0)
        except Timeout:
            raise ClaireError(f"another patrol (claire watch, or claire serve --watch) is already using the job store "
                              f"{self.store.path}: one patrol per store; stop it, or give this one --data-dir") from None
        try:
            await self._run_locked(max_events)
        finally:
            lock.release()
        return self.stats

    async def _run_locked(self, max_events: int | None) -> None:
        if self.source.older_key:
            self.store.move_position(self.source.older_key, self.source.key)
        self._reader = asyncio.get_running_loop().create_task(self._read(max_events), name="claire-patrol-reader")
        try:
            await self._reader
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # the run itself was cancelled
                raise
        finally:
            self._stopping = True  # the run is over: edits waiting to be tried again stay queued in the store
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            for waiting in list(self._waiting):
                waiting.cancel()
            if self._waiting:
                await asyncio.gather(*list(self._waiting), return_exceptions=True)
            await self._index_pending()
        self._progress()

    async def _read(self, max_events: int | None) -> None:
        """Start the edits an earlier run left queued, then read events and start the kept edits."""
        position = self.store.position(self.source.key)
        for job in self.store.resumable_jobs("patrol"):  # left queued or running by an earlier patrol
            if self._stopping:
                return
            try:
                change = Change(**job["request"]["change"])
            except (KeyError, TypeError) as error:  # a row no release of the patrol wrote: it ends, the patrol goes on
                self.store.set_status(job["id"], "error", f"its stored change cannot be read ({error})")
                continue
            # a new run is someone's act (a restart, a re-run after the endpoint came back): an
            # edit that was waiting for its next try is tried at once
            await self._start(job["id"], change)
        async with aclosing(self.source.events(position, lambda: self._stopping)) as events:
            async for position, data in events:
                kept = self._event(position, data)
                if kept is not None:
                    await self._start(*kept)  # waits while edits_in_flight edits are being checked
                if self._stopping or (max_events is not None and self.stats.seen >= max_events):
                    break
                await self._index_if_due()

    def _event(self, position: str | None, data: str) -> tuple[str, Change] | None:
        """Store a kept edit as a job (its id and change returned when it is new to the store); an
        event that cannot be read is counted as bad, and the position goes on past it."""
        self.stats.seen += 1
        try:
            change = parse_change(data)
            reason = self.filters.why_not(change)
        except Exception as error:  # a poison event (whatever it holds) never stops the patrol
            self.stats.bad += 1
            problem = error if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
            log.warning("patrol: event at %s left aside: %s (%s)", describe_event(position), describe_event(problem),
                        describe_event(data))
            self.store.set_position(self.source.key, position)
            return None
        if change.timestamp:
            self.stats.lag_s = max(time.time() - change.timestamp, 0.0)
        if reason is not None:
            self.stats.left_aside += 1
            self.store.set_position(self.source.key, position)
            return None
        job_id = f"{change.wiki}:{change.new_revision}"
        request = {"title": change.title, "revision": change.new_revision, "old_revision": change.old_revision,
                   "wiki": change.wiki, "diff_url": change.diff_url(), "user": change.user, "comment": change.comment,
                   "received": time.time(), "change": asdict(change)}
        new = self.store.ensure_job("patrol", job_id, request)
        self.store.set_position(self.source.key, position)  # only now: the edit is safe in the store
        if not new:
            self.stats.repeated += 1
            return None
        self.stats.kept += 1
        self._progress()
        return job_id, change

    async def _start(self, job_id: str, change: Change) -> None:
        """Check an edit on a task of its own once fewer than ``edits_in_flight`` are being checked."""
        await self.edits.acquire()
        task = asyncio.get_running_loop().create_task(self._edit(job_id, change), name=f"claire-patrol-{job_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _try_later(self, job_id: str, change: Change, delay: float) -> None:
        """Start an edit again after ``delay`` seconds (unless the patrol stops first)."""
        async def wait_then_start() -> None:
            await pause(delay, lambda: self._stopping)
            if not self._stopping:
                await self._start(job_id, change)

        waiting = asyncio.get_running_loop().create_task(wait_then_start(), name=f"claire-patrol-retry-{job_id}")
        self._waiting.add(waiting)
        waiting.add_done_callback(self._waiting.discard)

    def _requeue(self, job_id: str, change: Change, error: ClaireError) -> None:
        """Put an edit whose wiki's API or LLM endpoint kept failing back in the queue, to be tried
        again later (``watch.retry_wait``, doubled each time, at most an hour), in this run or the next;
        once it was tried again ``watch.retry_tries`` times it ends as failed, with its reason (``claire watch
        --retry-failed`` queues it once more)."""
        retries = (self.store.job(job_id) or {}).get("retries") or 0
        if retries >= self.retry_tries:
            reason = f"gave up after {retries + 1} tries (tried again {retries} times, watch.retry_tries): {error}"
            self.store.add_notes(job_id, {"gave_up": reason})
            self.store.set_status(job_id, "error", reason)
            self.stats.failed += 1
            log.warning("patrol: %s (%s) %s", describe_event(change.title), job_id, reason)
            return
        delay = min(self.retry_wait * 2 ** min(retries, 20), MAX_RETRY_WAIT)
        after = f"{delay:,.0f} s" if delay >= 10 else f"{delay:.1f} s"
        self.store.requeue(job_id, retry_at=time.time() + delay, reason=f"to be tried again in {after}: {error}")
        self.stats.requeued += 1
        log.warning("patrol: %s (%s) will be tried again in %s: %s", describe_event(change.title), job_id, after, error)
        if not self._stopping:
            self._try_later(job_id, change, delay)

    # -- one edit --------------------------------------------------------------------------------
    async def _edit(self, job_id: str, change: Change) -> None:
        """Check one edit (the slot :meth:`_start` took is given back at the end)."""
        try:
            received = (self.store.job(job_id) or {}).get("request", {}).get("received") or time.time()
            try:
                facts = await self._facts(job_id, change)
                if facts is None:
                    self.stats.skipped += 1
                    return
                await self.runner.run_job(job_id)
                if self.store.retry_failed_facts(job_id, unavailable_facts(self.store.facts(job_id))):
                    # facts whose check the LLM endpoint's failures cut short are checked again later
                    raise LLMUnavailable("the LLM endpoint kept failing while its facts were checked")
                finished = self.store.job(job_id) or {}
                if finished.get("status") == "error":
                    self.stats.failed += 1
                else:
                    self.stats.checked += 1
                checked = [f for f in self.store.facts(job_id) if recorded_outcome(f) != "failed"]
                self.stats.facts += len(checked)
                flagged = sum(recorded_outcome(f) == "flagged" for f in checked)
                self.stats.flagged += flagged
                if flagged:
                    self.stats.flagged_edits.append(job_id)
                self.stats.latencies.append(time.time() - received)
            except asyncio.CancelledError:  # stopped, not interrupted: the next start resumes it
                self.store.set_status(job_id, "queued")
                raise
            except (WikiUnavailable, LLMUnavailable) as error:
                self._requeue(job_id, change, error)
            except ClaireError as error:
                self.stats.failed += 1
                self.store.set_status(job_id, "error", str(error))
                log.warning("patrol: %s (%s) could not be checked: %s", change.title, job_id, error)
            except Exception as error:  # a bug ends this edit with a message, never the patrol
                self.stats.failed += 1
                problem = redact(f"{type(error).__name__}: {error}")
                self.store.set_status(job_id, "error", problem)
                log.warning("patrol: %s (%s) failed: %s", change.title, job_id, problem)
            finally:
                self._progress()
        finally:
            self.edits.release()

    async def _facts(self, job_id: str, change: Change) -> list[dict[str, Any]] | None:
        """Store the facts the edit added or changed (None: the edit has nothing to check, said in its job)."""
        stored = self.store.facts(job_id)
        if stored:  # extracted before a restart
            return stored
        self.store.set_status(job_id, "running")
        wanted = [r for r in (change.old_revision, change.new_revision) if r]
        revisions = await self.wiki.revisions(self.api_url or change.api_url(), wanted, categories=bool(self.categories))
        new_text = revisions.texts.get(change.new_revision or 0)
        why = None
        if revisions.page_missing:
            why = "the page no longer exists"
        elif new_text is None:
            why = f"revision {change.new_revision} is no longer available"
        elif self.categories and not set(self.categories) & set(revisions.categories):
            why = "the page is outside the category filter"
        if why is not None:
            self.store.set_status(job_id, "skipped", why)
            return None
        page_id = revisions.page_id or 0
        url = change.page_url()
        new_text = new_text or ""
        old_text = revisions.texts.get(change.old_revision or 0)
        left_out = LeftOut(revision_chars=max(len(new_text) - MAX_REVISION_CHARS, 0))
        new = await asyncio.to_thread(page_blocks, page_id, change.new_revision or 0, change.title,
                                      new_text[:MAX_REVISION_CHARS], url=url)
        old = await asyncio.to_thread(page_blocks, page_id, change.old_revision or 0, change.title,
                                      old_text[:MAX_REVISION_CHARS], url=url) if old_text is not None else None
        if self._indexable and not new.skipped and not left_out.revision_chars:
            page = DumpPage(page_id=page_id, revision_id=change.new_revision or 0, title=change.title, namespace=0,
                            body=new_text or "", kind="wikitext", url=url)
            self.store.add_pending_page(f"{change.wiki}:{page_id}", job_id, asdict(page))
        if new.skipped:
            self.store.set_status(job_id, "skipped", f"the page is a {new.skipped} page")
            return None
        rows: dict[str, dict[str, Any]] = {}
        passages = await asyncio.to_thread(changed_passages, old, new)
        left_out.changed_chars = sum(len(passage.text) for passage in passages)
        for number, passage in enumerate(passages):
            if len(rows) >= self.max_facts or left_out.read_chars >= self.max_edit_chars:
                break
            room = self.max_edit_chars - left_out.read_chars
            if len(passage.text) > room:
                if number:  # whole passages only, unless the first alone is too long
                    break
                passage.text = passage.text[:room]
            left_out.read_chars += len(passage.text)
            try:
                claims = await extract_claims(title=change.title, section=passage.section, text=passage.text,
                                              llm=self.runner.llm, config=self.config)
            except LLMUnavailable:  # not the passage's fault: the whole edit is tried again later
                raise
            except ClaireError as error:  # nothing checkable in this passage (none found, or all too long)
                log.info("patrol: %s (%s), %s: %s", change.title, job_id, passage.section or "lead", error)
                continue
            for claim in claims:  # checked in the context of the block the edit wrote into
                # the edit's own <ref>s (none is an answer too) and its revision: a resolve cites and links these
                claim.context = claim.context.model_copy(update={
                    "content": passage.block.content, "url": passage.block.url,
                    "citations": list(passage.block.citations or []),
                    "revision_id": passage.block.revision_id or change.new_revision})
                rows.setdefault(claim.claim_id, {"claim_id": claim.claim_id, "fact": claim.text, "claim": claim.model_dump()})
        left_out.facts = max(len(rows) - self.max_facts, 0)
        if left_out:
            self.stats.cut += 1
            self.store.add_notes(job_id, {"left_out": left_out.as_note(self.max_facts)})
            log.info("patrol: %s (%s): %s", describe_event(change.title), job_id, left_out.as_note(self.max_facts)["note"])
        if not rows:
            self.store.set_status(job_id, "skipped", "the edit added or changed no checkable fact")
            return None
        self.store.add_facts(job_id, list(rows.values())[:self.max_facts])
        return self.store.facts(job_id)

    # -- keeping the index current ---------------------------------------------------------------
    async def _index_if_due(self) -> None:
        if self._indexable and time.monotonic() - self._last_indexed >= self.index_every:
            await self._index_pending()

    async def _index_pending(self) -> None:
        """Store the edited pages waiting in the store in the index, and let searches see them."""
        self._last_indexed = time.monotonic()
        if not self._indexable:
            return
        waiting = self.store.pending_pages()
        if not waiting:
            return
        retrieval = self.config.retrieval
        pages = [DumpPage(**item["page"]) for item in waiting]
        try:
            await asyncio.to_thread(update_pages, pages, name=retrieval.index, root=retrieval.index_root(),
                                    url=retrieval.url, api_key=retrieval.qdrant_api_key.get_secret_value()
                                    if retrieval.qdrant_api_key else None)
        except ClaireError as error:
            log.warning("patrol: %d edited page(s) could not be stored in index %s yet: %s", len(pages), retrieval.index, error)
            return
        self.store.drop_pending_pages([(item["page_key"], item["job_id"]) for item in waiting])
        self.stats.indexed += len(pages)
        refresh = getattr(self.runner.retriever, "refresh", None)
        if refresh is not None:
            await asyncio.to_thread(refresh)

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.stats)


def unavailable_facts(facts: list[dict[str, Any]]) -> list[int]:
    """The failed facts (by index) whose check met an LLM endpoint that kept failing (their
    usage counts ``endpoint_unavailable``): asking again later may well answer them."""
    return [fact["idx"] for fact in facts if fact["status"] == "error"
            and (((fact.get("assessment") or {}).get("usage") or {}).get("events") or {}).get("endpoint_unavailable")]


def patrol_source(config: Config) -> tuple[ChangeSource, ChangeFilter]:
    """Where ``config.watch`` reads events from and which it keeps (a ConfigError when it cannot)."""
    watch = config.watch
    source = ChangeSource(url=watch.stream_url, replay=watch.replay, user_agent=watch.user_agent or USER_AGENT)
    filters = ChangeFilter(wikis=list(watch.wikis), namespaces=list(watch.namespaces), include_bots=watch.include_bots,
                           titles=list(watch.titles))
    return source, filters


def patrol_from_config(config: Config, store: JobStore, runner: JobRunner, *,
                       on_progress: Callable[[PatrolStats], None] | None = None) -> Patrol:
    """The patrol ``config.watch`` describes, over the store and job runner given."""
    watch = config.watch
    source, filters = patrol_source(config)
    return Patrol(config, store, runner, source, filters=filters, categories=list(watch.categories),
                  api_url=watch.api_url, edits_in_flight=watch.edits_in_flight, index_every=watch.index_every,
                  on_progress=on_progress)


async def run_patrol(config: Config, *, store_path: Path, concurrency: int, max_events: int | None = None,
                     on_progress: Callable[[PatrolStats], None] | None = None,
                     stop_on: tuple[int, ...] = (), retry_failed: bool = False) -> PatrolStats:
    """Run a patrol on its own (``claire watch``): the job store at ``store_path`` (the one the web
    app shows) and a job runner checking at most ``concurrency`` facts at once, without a server;
    the signals in ``stop_on`` stop it after the edits in flight; ``retry_failed`` first queues once
    more the edits that ended after their tries ran out."""
    from claire.agent.runtime import open_retrieval
    from claire.llm.client import ChatClient

    store = JobStore(store_path)
    if retry_failed:
        given_up = store.requeue_given_up("patrol")
        if given_up:
            log.warning("patrol: %d edit(s) that had failed are queued once more", len(given_up))
    llm = ChatClient.from_config(config.llm)
    retriever = await asyncio.to_thread(open_retrieval, config)
    runner = JobRunner(config, store, llm=llm, retriever=retriever, concurrency=concurrency)
    patrol = patrol_from_config(config, store, runner, on_progress=on_progress)
    loop = asyncio.get_running_loop()
    for number in stop_on:
        loop.add_signal_handler(number, patrol.stop)
    try:
        if not patrol.indexable:
            log.warning("patrol: edited pages are checked but not stored in index %s (it was not built from a dump, "
                        "or the patrol keeps more than one wiki)", config.retrieval.index)
        return await patrol.run(max_events=max_events)
    finally:
        for number in stop_on:
            loop.remove_signal_handler(number)
        await patrol.wiki.aclose()
        await llm.aclose()
        retriever.close()
        store.close()
