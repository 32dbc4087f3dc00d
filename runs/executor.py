"""The one executor of CLAIRE: "check these claims with this system", at most N at a time, each
result handed to a sink the moment it is ready.

Everything that checks claims submits to an :class:`Executor` — a batch evaluation and each cell
of a sweep (their sink is the run directory's ``predictions.jsonl``), a scan, the web app's
checks and scans and the patrol's edits (their sink is the job store,
:mod:`claire.jobs.store`), and the commands that check one claim (``claire check``,
``claire cite``, ``claire bench prompts``: :meth:`Executor.check`, then :meth:`RecordResult.answer`). A work item is a record with a key (its claim id); a sink says
which keys it already holds, so running the same items again checks only the rest (resumable),
and a key is checked at most once per run (idempotent). One executor's slots are shared by every
run submitted to it: the web app's jobs and the patrol's edits together never check more than its
``concurrency`` claims at once.

:meth:`Executor.check` checks one claim under a slot: usage is counted for it alone, the steps its
system takes go to the caller's listener (:func:`claire.agent.system.steps_to`), and an unexpected
exception becomes the outcome's error instead of ending the run. :meth:`Executor.each` is the
bounded pool underneath, also used for work that is not a check (extracting facts resumably).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from claire.agent.system import StepListener, steps_to
from claire.domain import admit
from claire.errors import ClaireError, redact
from claire.files import append_jsonl, read_log
from claire.usage import track_usage


@dataclass
class RecordResult:
    """What checking one record produced: the system's answer (``result``, which carries its own
    error when the system could not answer), or ``error`` when the check broke; its usage and
    latency either way."""

    key: str
    record: Any
    result: Any | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0

    @property
    def failed(self) -> bool:
        """Whether the check ended without an answer, or with an answer that is an error."""
        return self.error is not None or getattr(self.result, "error", None) is not None

    def answer(self) -> Any:
        """The system's answer (which may carry its own error); a :class:`ClaireError` saying why
        when the check broke before the system could answer (for a command that checks one claim)."""
        if self.result is None:
            raise ClaireError(self.error or "the check ended without an answer")
        return self.result


class Sink(Protocol):
    """Where outcomes go: it says which keys it holds, hears each check's steps and keeps each outcome."""

    def finished(self) -> dict[str, str | None]:
        """The keys already held, each with its error (None when it was answered)."""
        ...

    def started(self, key: str) -> None:
        """A check of ``key`` begins."""
        ...

    def step(self, key: str) -> StepListener | None:
        """Who hears the steps of the check of ``key`` (None: nobody)."""
        ...

    async def put(self, outcome: RecordResult) -> None:
        """Keep an outcome (an OSError here ends the run: a result that cannot be kept is lost)."""
        ...


def todo(records: Sequence[Any], finished: dict[str, str | None], *, key: Callable[[Any], str],
         retry_errors: bool = False) -> list[Any]:
    """The records a sink does not hold yet (with ``retry_errors``, also those it holds as errors),
    each key once, in order."""
    seen: set[str] = set()
    wanted = []
    for record in records:
        name = key(record)
        if name in seen or (name in finished and not (retry_errors and finished[name] is not None)):
            continue
        seen.add(name)
        wanted.append(record)
    return wanted


def _one_line(error: BaseException) -> str:
    """An exception as one line: a pydantic validation error by its first problem, else its first line."""
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "the answer"
            return f"{where}: {first.get('msg')}"
        except Exception:  # noqa: BLE001 - any other shape: fall back to the text
            pass
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def _whose(system: Any) -> str:
    """How an error names the system: a built-in one by name, one written outside CLAIRE as 'your system NAME'."""
    name = str(getattr(system, "name", type(system).__name__))
    module = type(system).__module__ or ""
    return f"system {name}" if module.startswith("claire.") else f"your system {name} ({module}.{type(system).__name__})"


class Executor:
    """A bounded pool for checking claims: ``concurrency`` slots shared by every run submitted.
    Each check may take at most ``claim_timeout`` seconds, and each answer enters the domain through
    :func:`claire.domain.admit` (an impossible score is a failed fact; texts longer than
    ``max_answer_chars`` are cut, marked)."""

    def __init__(self, concurrency: int, *, claim_timeout: float | None = None, max_answer_chars: int = 100_000):
        if concurrency < 1:
            raise ClaireError(f"concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency
        self.claim_timeout = claim_timeout
        self.max_answer_chars = max_answer_chars
        self._slots = asyncio.Semaphore(concurrency)

    @classmethod
    def for_config(cls, config: Any, concurrency: int) -> "Executor":
        """An executor with the configuration's limits (``agent.claim_timeout``, ``agent.max_answer_chars``);
        ``config`` is a Config, or its public dict (a run's config.json)."""
        agent = config.get("agent") or {} if isinstance(config, dict) else config.agent.model_dump()
        return cls(concurrency, claim_timeout=agent.get("claim_timeout"),
                   max_answer_chars=agent.get("max_answer_chars") or 100_000)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the executor's slots (for work of a run that is not a check, e.g. extraction)."""
        async with self._slots:
            yield

    async def check(self, system: Any, record: Any, *, key: str | None = None,
                    on_step: StepListener | None = None, **options: Any) -> RecordResult:
        """Check one record with ``system`` under a slot, its steps to ``on_step`` and ``options``
        to the system's ``assess`` (an interactive check's thread id); never raises for a failed
        check (only cancellation goes through)."""
        async with self._slots:
            return await self._check(system, record, key=key, on_step=on_step, options=options)

    async def _check(self, system: Any, record: Any, *, key: str | None, on_step: StepListener | None,
                     options: dict[str, Any] | None = None) -> RecordResult:
        outcome = RecordResult(key=key if key is not None else str(getattr(record, "claim_id", "")), record=record)
        start = time.perf_counter()
        with track_usage() as usage, steps_to(on_step):
            try:
                async with asyncio.timeout(self.claim_timeout):  # no task of its own: a sys.exit() in it stays here
                    answer = await system.assess(record, **(options or {}))
                if answer is None:
                    outcome.error = f"{_whose(system)} answered nothing (its assess returned None)"
                elif isinstance(answer, (dict, list, tuple, str, bytes, int, float, bool)):
                    outcome.error = (f"{_whose(system)} answered a {type(answer).__name__}, not an answer object "
                                     "(its assess must return an Assessment, or the task's answer model)")
                else:
                    outcome.result = admit(answer, system=_whose(system), max_chars=self.max_answer_chars)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                outcome.error = (f"{_whose(system)} took longer than {self.claim_timeout:g} s on this claim "
                                 "(agent.claim_timeout)")
            except ClaireError as error:
                outcome.error = str(error)
            except SystemExit as error:  # a system's sys.exit() ends its claim, never the run
                outcome.error = f"{_whose(system)} called sys.exit({error.code!r}) while checking the claim"
            except Exception as error:  # one broken record must not end the run
                where = "" if type(system).__module__.startswith("claire.") else f"{_whose(system)} failed: "
                outcome.error = redact(where + _one_line(error))
        outcome.usage = usage.to_dict()
        outcome.latency_s = time.perf_counter() - start
        return outcome

    async def run(self, system: Any, records: Sequence[Any], sink: Sink, *, key: Callable[[Any], str] | None = None,
                  retry_errors: bool = False) -> int:
        """Check every record ``sink`` does not hold yet (see :func:`todo`), handing each outcome to
        the sink as it is ready; the number checked."""
        key = key or (lambda record: str(record.claim_id))
        pending = todo(records, sink.finished(), key=key, retry_errors=retry_errors)

        async def one(record: Any) -> None:
            name = key(record)
            sink.started(name)
            await sink.put(await self._check(system, record, key=name, on_step=sink.step(name)))

        await self.each(pending, one)
        return len(pending)

    async def each(self, items: Iterable[Any], work: Callable[[Any], Awaitable[None]]) -> None:
        """Run ``work`` over ``items``, each under a slot; an error in one stops the others
        (``work`` turns the failures it expects into results of its own). At most ``concurrency``
        tasks exist at a time, however many items there are."""
        queue = iter(items)

        async def worker() -> None:
            for item in queue:
                async with self._slots:
                    await work(item)

        workers = [asyncio.create_task(worker()) for _ in range(self.concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:
            for job in workers:
                job.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def resumable_step(items: Sequence[Any], *, key: Callable[[Any], str], field: str, path: Path,
                         work: Callable[[Any], Awaitable[dict[str, Any]]], concurrency: int) -> dict[str, dict[str, Any]]:
    """One resumable step of a job over ``items`` that is not a check (e.g. extracting the facts of
    sampled passages): the records of ``path`` (JSON lines, each naming its item in ``field``) are
    kept, and ``work`` runs — ``concurrency`` at a time — for every item without a record or whose
    record has an ``error``, each new record appended as it finishes. Returns the latest record of
    every item, by key."""
    done = {str(record[field]): record for record in read_log(path) if isinstance(record, dict) and field in record}
    pending = todo(items, {name: record.get("error") for name, record in done.items()}, key=key, retry_errors=True)
    lock = asyncio.Lock()

    async def one(item: Any) -> None:
        record = await work(item)
        async with lock:
            await asyncio.to_thread(append_jsonl, path, record)
            done[str(record[field])] = record

    await Executor(max(1, concurrency)).each(pending, one)
    return done
