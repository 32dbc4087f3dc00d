"""Stored jobs: single-fact checks, whole-article scans and the patrol's edits, checked by the
one executor (:mod:`claire.runs.executor`) into the job store.

Jobs run as asyncio tasks on the loop, independent of the request that created them (a client of
the web app may disconnect), with at most ``concurrency`` facts being checked at once across all
jobs — the executor's slots. Facts are extracted with ``jobs.scan.extract_located_claims``; each job's
facts are submitted to the executor with the job's facts in the store as the sink
(:class:`JobSink`), so every step a system reports, each finished fact and each status change is
written to the :class:`~claire.jobs.store.JobStore` and wakes whoever listens for the
job's events. One system per system name serves every job, over one shared LLM client and
retriever. On start the runner picks up the jobs a previous run left queued or running: facts
already checked are kept, the rest are checked.
"""

from __future__ import annotations

import asyncio
import re
from contextlib import contextmanager, suppress
from typing import Any, Iterator

from claire.agent.runtime import ready_system
from claire.agent.system import StepListener, System
from claire.config import Config
from claire.domain import Claim, Passage
from claire.errors import ClaireError
from claire.runs.executor import Executor, RecordResult
from claire.indexes.registry import Searcher
from claire.llm.client import ChatClient
from claire.jobs.store import JobStore
from claire.jobs.scan import context_language, extract_located_claims
from claire.jobs.spans import utf16_index

MAX_OUTPUT_CHARS = 4000  # a step's output as streamed to clients (the full trace is in the assessment)


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_OUTPUT_CHARS:
        return value[:MAX_OUTPUT_CHARS] + "…"
    if isinstance(value, list):
        return [_short(v) for v in value[:50]]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


class TooBusy(ClaireError):
    """More jobs are waiting than the server accepts."""


class JobBusy(ClaireError):
    """A job cannot be re-checked now: it is still running, or nothing of it failed."""


def cited_numbers(reasoning: str | None) -> list[int]:
    """The passage numbers [n] the verifier's analysis cites, in order of first mention."""
    return list(dict.fromkeys(int(n) for n in re.findall(r"\[(\d+)\]", reasoning or "")))


class JobRunner:
    """Runs checks and scans as tasks on the server's loop and publishes what happens to them."""

    def __init__(self, config: Config, store: JobStore, *, llm: ChatClient, retriever: Searcher, concurrency: int = 4,
                 max_jobs: int = 200):
        if config.agent.report is None:  # editors read the two-sided report in the side panel
            config = config.with_overrides({"agent.report": True})
        self.config = config.with_overrides({"agent.review": False})
        self.store = store
        self.llm = llm
        self.retriever = retriever
        self.executor = Executor.for_config(config, concurrency)
        self.concurrency = concurrency
        self._systems: dict[str | None, System] = {}
        self.max_jobs = max_jobs
        self.tasks: dict[str, asyncio.Task] = {}
        self._listeners: dict[str, set[asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- events ----------------------------------------------------------------------------
    @contextmanager
    def listening(self, job_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever something new is published for ``job_id``."""
        event = asyncio.Event()
        self._listeners.setdefault(job_id, set()).add(event)
        try:
            yield event
        finally:
            listeners = self._listeners.get(job_id, set())
            listeners.discard(event)
            if not listeners:
                self._listeners.pop(job_id, None)

    def _wake(self, job_id: str) -> None:
        for event in self._listeners.get(job_id, ()):
            event.set()

    def publish(self, job_id: str, kind: str, data: dict[str, Any]) -> None:
        """Store an event of a job and wake its listeners (from the loop or a worker thread)."""
        self.store.add_event(job_id, kind, data)
        loop = self._loop
        if loop is None:
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._wake(job_id)
        else:  # a step reported from a worker thread
            loop.call_soon_threadsafe(self._wake, job_id)

    def _status(self, job_id: str, status: str, error: str | None = None) -> None:
        self.store.set_status(job_id, status, error)
        self.store.drop_events(job_id, "status")  # a job's latest status is the one that counts
        self.publish(job_id, "status", {"status": status, "error": error})

    # -- submitting ------------------------------------------------------------------------
    def _admit(self) -> None:
        if len(self.tasks) >= self.max_jobs:
            raise TooBusy(f"{len(self.tasks)} jobs are already queued or running (the limit is {self.max_jobs}); "
                          "try again when some have finished")

    def submit_check(self, request: dict[str, Any]) -> str:
        """Store a check of one fact and start it; its job id."""
        self._admit()
        job_id = self.store.create_job("check", request)
        claim = Claim(claim_id="check", text=request["fact"], context=Passage(
            document_title=request.get("title") or "", section_title=request.get("section") or "",
            content=request.get("context") or "", language=context_language(self.config, request.get("language"))))
        self.store.add_facts(job_id, [{"claim_id": claim.claim_id, "fact": claim.text, "claim": claim.model_dump()}])
        self._start(job_id)
        return job_id

    def submit_scan(self, request: dict[str, Any]) -> str:
        """Store a scan of an article or passage and start it; its job id."""
        self._admit()
        job_id = self.store.create_job("scan", request)
        self._start(job_id)
        return job_id

    def recheck_failed(self, job_id: str) -> int:
        """Check again the facts of a finished job that could not be checked (a scan whose
        extraction failed is extracted again); how many facts were queued."""
        job = self.store.job(job_id)
        if job is None:
            raise ClaireError(f"no job with id '{job_id}'")
        if job_id in self.tasks or job["status"] in ("queued", "running"):
            raise JobBusy(f"{job['kind']} '{job_id}' is still running: re-check its failed facts once it has finished")
        failed = [fact for fact in self.store.facts(job_id) if fact["status"] == "error"]
        if not failed and not (job["status"] == "error" and job["kind"] == "scan" and not self.store.facts(job_id)):
            raise JobBusy(f"{job['kind']} '{job_id}' has no fact that failed")
        self._admit()
        self.store.retry_failed_facts(job_id)
        self.store.restart(job_id)  # a person's re-check: the job's interruptions and retries count anew
        self.llm.try_now()  # ... and an endpoint that failed moments ago is tried at once
        self._status(job_id, "queued")
        self._start(job_id)
        return len(failed)

    def resume(self) -> list[str]:
        """Start again every job a previous server left unfinished (one interrupted too often
        ends as an error instead: :meth:`JobStore.resumable_jobs`)."""
        resumed = []
        for job in self.store.resumable_jobs():
            self._start(job["id"])
            resumed.append(job["id"])
        return resumed

    def _start(self, job_id: str) -> None:
        self._loop = asyncio.get_running_loop()
        task = self._loop.create_task(self.run_job(job_id), name=f"claire-job-{job_id}")
        self.tasks[job_id] = task
        task.add_done_callback(lambda _: self.tasks.pop(job_id, None))

    async def shutdown(self) -> None:
        """Stop running jobs; they go back to the queue in the store and resume on the next start."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- running ---------------------------------------------------------------------------
    def system(self, name: str | None) -> System:
        """The system ``name`` (None: the configured one), built once and shared by every job."""
        if name not in self._systems:
            self._systems[name] = ready_system(self.config, llm=self.llm, retriever=self.retriever, name=name)
        return self._systems[name]

    async def run_job(self, job_id: str) -> None:
        """Run a stored job to its end: extract a scan's facts if need be, check every fact not yet
        checked, and record how the job ended (failures are the job's, never the caller's)."""
        job = self.store.job(job_id)
        assert job is not None
        try:
            self._status(job_id, "running")
            facts = self.store.facts(job_id)
            if job["kind"] == "scan" and not facts:
                facts = await self._extract(job_id, job["request"])
            claims = {str(fact["idx"]): Claim.model_validate(fact["claim"]) for fact in facts}
            keys = {id(claim): key for key, claim in claims.items()}
            await self.executor.run(self.system(job["request"].get("system")), list(claims.values()),
                                    JobSink(self, job_id), key=lambda claim: keys[id(claim)])
            failed = [fact for fact in self.store.facts(job_id) if fact["status"] == "error"]
            if facts and len(failed) == len(facts):  # nothing was checked: never a clean-looking "done"
                self._status(job_id, "error", f"no fact could be checked: {failed[0]['error'] or 'error'}")
            else:
                self._status(job_id, "done")
        except asyncio.CancelledError:  # stopped, not interrupted: the next start resumes it
            self.store.set_status(job_id, "queued")
            raise
        except Exception as error:  # a bug must end this job with a message, not the server
            reason = str(error) if isinstance(error, ClaireError) else f"{type(error).__name__}: {error}"
            with suppress(ClaireError):  # every fact left unchecked can be checked again
                self.store.fail_unchecked(job_id, f"not checked: the job stopped ({reason})"[:2000])
            self._status(job_id, "error", reason)

    async def _extract(self, job_id: str, request: dict[str, Any]) -> list[dict[str, Any]]:
        text = request["text"]
        async with self.executor.slot():
            located = await extract_located_claims(title=request["title"], section=request.get("section") or "", text=text,
                                                   llm=self.llm, config=self.config, max_facts=request.get("max_facts"),
                                                   edition=request.get("language"))
        rows = []
        for claim, span in located:
            rows.append({"claim_id": claim.claim_id, "fact": claim.text, "claim": claim.model_dump(),
                         "start": span[0] if span else None, "end": span[1] if span else None})
        self.store.add_facts(job_id, rows)
        facts = self.store.facts(job_id)
        self.publish(job_id, "facts", {"facts": [{"index": f["idx"], "fact": f["fact"],
                                                   "start": utf16_index(text, f["span_start"]),
                                                   "end": utf16_index(text, f["span_end"])} for f in facts]})
        return facts


class JobSink:
    """The executor's sink for one stored job: a fact's steps, start and end are written to the
    store and published to the job's listeners; a fact already done or failed is not checked again."""

    def __init__(self, runner: JobRunner, job_id: str):
        self.runner = runner
        self.store = runner.store
        self.job_id = job_id

    def finished(self) -> dict[str, str | None]:
        """The facts (by index) already checked, each with its error."""
        return {str(fact["idx"]): fact["error"] for fact in self.store.facts(self.job_id)
                if fact["status"] in ("done", "error")}

    def started(self, key: str) -> None:
        """A fact's check begins (steps of an earlier, interrupted check are forgotten)."""
        index = int(key)
        self.store.drop_steps(self.job_id, index)
        self.store.set_fact_status(self.job_id, index, "running")
        self.runner.publish(self.job_id, "fact_started", {"fact": index})

    def step(self, key: str) -> StepListener:
        """Each step of a fact's check, published as it is taken."""
        index = int(key)

        def on_step(event: dict[str, Any]) -> None:
            item = event.get("item") or {}
            self.runner.publish(self.job_id, "step", {
                "fact": index, "action_name": item.get("action_name"), "action_argument": _short(item.get("action_argument")),
                "action_output": _short(item.get("action_output")), "steps": event.get("steps"),
                "documents": event.get("documents")})

        return on_step

    async def put(self, outcome: RecordResult) -> None:
        """Store a fact's assessment (or why it has none) and publish it."""
        index = int(outcome.key)
        assessment = outcome.result.model_dump(mode="json") if outcome.result is not None else None
        error = outcome.error if outcome.result is None else outcome.result.error
        self.store.finish_fact(self.job_id, index, assessment, error)
        failed = error is not None  # a failed check has no score or verdict to show
        self.runner.publish(self.job_id, "fact", {"fact": index, "score": None if failed else (assessment or {}).get("score"),
                                                  "verdict": None if failed else (assessment or {}).get("verdict"),
                                                  "error": error})
