"""A run directory's files: ``config.json`` and the append-only ``predictions.jsonl``.

Each finished claim appends one complete line with a single ``os.write`` on an ``O_APPEND``
descriptor, then fsyncs, so a run killed at any moment leaves whole lines plus at most one torn
last line. Reading ignores a torn last line; opening the log for appending cuts it away first.
A damaged line anywhere else (edited by hand, a disk error) is left out with a warning naming it
when reading, and moved to ``predictions.rejected.jsonl`` when the log is opened for appending,
so its claim is run again. When a claim has several lines (a retried error), the last one counts.
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import hashlib
import json
import logging
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from claire.domain import recorded_outcome
from claire.tasks.measures import PREDICTIONS
from claire.tasks.records import Prediction
from claire.errors import ConfigError, DatasetError, redact
from claire.files import json_lines, valid_text, write_atomically, strict_json
from claire.validation import describe

REJECTED = "predictions.rejected.jsonl"
CONFIG = "config.json"
RECORDS = "records.json"
"""The dataset records a run directory's latest run was asked for, each with its digest: what
its scores cover, and how a resumed run notices a record edited under the same id."""

log = logging.getLogger(__name__)
_warned: set[tuple[str, int, bytes]] = set()
_CLAIM_ID = re.compile(rb'"claim_id"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


@dataclass
class _Damaged:
    number: int  # 1-based line number
    raw: bytes
    problem: str

    def claim(self) -> str:
        found = _CLAIM_ID.search(self.raw)
        return f" (claim {found.group(1).decode('utf-8', 'replace')})" if found else ""


@dataclass
class _Contents:
    latest: dict[str, Any] = field(default_factory=dict)  # last prediction (of the line model) per claim_id
    count: int = 0  # valid lines
    good: list[bytes] = field(default_factory=list)  # the valid lines, in order, without newlines
    damaged: list[_Damaged] = field(default_factory=list)  # invalid lines other than a torn last one
    clean: bool = True  # the file is exactly the valid lines, each ending in a newline


def _read(path: Path, model: type[BaseModel] = Prediction) -> _Contents:
    """Parse ``predictions.jsonl``: a torn last line (cut short, no newline) is left out, and so
    is every other invalid line, recorded as damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _Contents()
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error}") from None
    contents = _Contents()
    for line in json_lines(data):
        problem = line.problem
        if problem is None:
            try:
                prediction = model.model_validate(line.value)
            except ValidationError as error:
                problem = describe(error)
        if problem is not None:
            contents.clean = False
            if not line.unterminated:  # a torn last line is simply left out
                contents.damaged.append(_Damaged(line.number, line.raw, problem))
            continue
        contents.latest[prediction.claim_id] = prediction
        contents.count += 1
        contents.good.append(line.raw)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    # the file is exactly its valid lines, each with its newline: no blank, damaged or torn line
    contents.clean = (not data or data.endswith(b"\n")) and len(contents.good) == len(lines)
    return contents


def load_predictions(run_dir: str | Path, model: type[BaseModel] = Prediction) -> list[dict[str, Any]]:
    """The predictions of a run directory (or a predictions.jsonl path): one per claim, the last
    line of each claim_id winning, a torn last line ignored. ``model`` is the line's schema."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / PREDICTIONS
    if not path.is_file():
        raise ConfigError(f"no predictions at {path}: run `claire eval ... --out DIR` first")
    contents = _read(path, model)
    for bad in contents.damaged:
        if (str(path), bad.number, bad.raw) in _warned:  # the same file is often read several times
            continue
        _warned.add((str(path), bad.number, bad.raw))
        log.warning("%s: line %d%s is damaged (%s); left out. A resumed `claire eval` with this --out moves it "
                    "to %s and runs its claim again", path, bad.number, bad.claim(), bad.problem, REJECTED)
    return [prediction.model_dump(mode="json") for prediction in contents.latest.values()]


def refuse_if_in_use(run_dir: Path) -> None:
    """A ConfigError now, before any model loads, when another process holds ``run_dir``
    (:class:`PredictionLog` takes the lock itself when the run starts)."""
    lock = Path(run_dir) / ".lock"
    if not lock.is_file():
        return
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigError(f"{run_dir} is in use by another claire process; wait for it or choose another --out") from None
    finally:
        os.close(fd)  # closing releases a lock this check took


def json_text(line: BaseModel) -> str:
    """One prediction as JSON text. Text that is not valid Unicode — half a surrogate pair, from a
    model's answer or a remote search service — is written with U+FFFD in its place rather than
    failing the whole run."""
    try:
        return line.model_dump_json()
    except ValueError:  # pydantic's serialization error and UnicodeEncodeError both are one
        return strict_json(valid_text(line.model_dump(mode="python")), default=str)


class PredictionLog:
    """The append-only predictions file of one run directory, opened for a (resumed) run.
    ``model`` is the schema of a line (any pydantic model with a ``claim_id``)."""

    def __init__(self, run_dir: Path, model: type[BaseModel] = Prediction):
        self.path = Path(run_dir) / PREDICTIONS
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"cannot use {run_dir} as a run directory: {error.strerror}") from None
        # one process per run directory: a second one would append to a file the first may replace
        self._lock_fd = os.open(self.path.parent / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise ConfigError(f"{run_dir} is in use by another claire process; wait for it or choose another --out") from None
        contents = _read(self.path, model)
        self.latest, self._lines = contents.latest, contents.count
        if contents.damaged:
            self._reject(contents.damaged)  # first, so that no line is ever only in memory
        if not contents.clean:  # keep exactly the valid lines, each with its newline
            self._replace(b"".join(line + b"\n" for line in contents.good))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = asyncio.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claire-predictions")  # never queues behind searches

    def _reject(self, damaged: list[_Damaged]) -> None:
        rejected = self.path.with_name(REJECTED)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        records = []
        for bad in damaged:
            record: dict[str, Any] = {"line": bad.number, "problem": bad.problem, "rejected_at": now}
            try:
                record["text"] = bad.raw.decode("utf-8")
            except UnicodeDecodeError:
                record["base64"] = base64.b64encode(bad.raw).decode("ascii")
            records.append(strict_json(record) + "\n")
        with open(rejected, "a", encoding="utf-8") as handle:
            handle.write("".join(records))
            handle.flush()
            os.fsync(handle.fileno())
        for bad in damaged:
            log.warning("%s: line %d%s is damaged (%s); moved it to %s and will run its claim again",
                        self.path, bad.number, bad.claim(), bad.problem, rejected.name)

    def _replace(self, payload: bytes) -> None:
        descriptor, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".predictions.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, 0o644)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    async def append(self, prediction: BaseModel) -> None:
        """Append one line durably (one write, then fsync) and remember it."""
        line = (redact(json_text(prediction)) + "\n").encode("utf-8")  # no key or URL password on disk
        async with self._lock:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._write, line)
            self.latest[prediction.claim_id] = prediction  # type: ignore[attr-defined]
            self._lines += 1

    def _write(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def compact(self) -> None:
        """Rewrite the file with one line per claim when retries left superseded lines."""
        if self._lines == len(self.latest):
            return
        self._replace(b"".join((redact(json_text(p)) + "\n").encode("utf-8") for p in self.latest.values()))
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._lines = len(self.latest)

    def forget(self, claim_ids: set[str]) -> None:
        """Drop every line of these claims (their records changed: they are run again), rewriting
        the file atomically; moved to the rejected file, so nothing is lost."""
        gone = [self.latest.pop(claim_id) for claim_id in claim_ids if claim_id in self.latest]
        if not gone:
            return
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with open(self.path.with_name(REJECTED), "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps({"claim_id": p.claim_id, "problem": "its dataset record changed",  # type: ignore[attr-defined]
                                             "rejected_at": now, "text": redact(json_text(p))}, ensure_ascii=False) + "\n"
                                 for p in gone))
            handle.flush()
            os.fsync(handle.fileno())
        self._replace(b"".join((redact(json_text(p)) + "\n").encode("utf-8") for p in self.latest.values()))
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._lines = len(self.latest)

    def close(self) -> None:
        """Wait for the writes, close the file and release the run directory."""
        self._thread.shutdown(wait=True)
        os.close(self._fd)
        os.close(self._lock_fd)  # releases the run-directory lock


def record_digest(record: Any) -> str:
    """A fingerprint of a dataset record as a system reads it (its text, context, gold label, ...):
    a record edited under the same id has another digest."""
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else repr(record)
    return hashlib.sha1(json.dumps(data, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()[:16]


def read_records(run_dir: str | Path) -> dict[str, str] | None:
    """The records (claim id -> digest) of a run directory's latest run, or None when it kept none
    (a run of an earlier version: every prediction counts)."""
    path = Path(run_dir) / RECORDS
    if not path.is_file():
        return None
    try:
        records = json.loads(path.read_text(encoding="utf-8")).get("records")
    except (OSError, ValueError, AttributeError):
        return None
    return {str(k): str(v) for k, v in records.items()} if isinstance(records, dict) else None


def write_records(run_dir: str | Path, digests: dict[str, str]) -> None:
    """Keep the records (claim id -> digest) the latest run was asked for, atomically."""
    write_atomically(Path(run_dir) / RECORDS, json.dumps({"records": digests}, ensure_ascii=False) + "\n")


def read_run_config(run_dir: str | Path) -> dict[str, Any] | None:
    """A run directory's config.json (None when it has none yet)."""
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not readable JSON ({error}); delete it or use another --out") from None


def write_run_config(run_dir: str | Path, data: dict[str, Any]) -> None:
    """Write a run directory's config.json atomically."""
    path = Path(run_dir) / CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, strict_json(data, indent=2) + "\n")


@dataclass
class FactRow:
    """One checked fact as people read it (a scan, an estimate, an audit, a review): its verdict,
    the passage it mostly rests on and the passages its analysis cites."""
    claim_id: str
    fact: str
    score: float | None
    verdict: str | None
    key_evidence: str | None
    error: str | None
    reasoning: str | None
    passages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """``flagged``, ``consistent`` or ``failed``: a check that met an error is failed whatever
        score its research reached (the verdict already applied the threshold)."""
        return recorded_outcome(self)


def _passages(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[Any, dict[str, Any]] = {}
    for item in trace:
        if item.get("action_name") == "search" and isinstance(item.get("action_output"), list):
            for passage in item["action_output"]:
                seen.setdefault(passage.get("n"), passage)
    return [seen[n] for n in sorted(seen, key=lambda n: (n is None, n))]


def row_from_prediction(prediction: dict[str, Any]) -> FactRow:
    """A predictions line as people read a checked fact: its verdict, the passage it mostly rests on
    and the passages its analysis cites (a scan, an estimate, an audit and a review show facts so)."""
    passages = _passages(prediction.get("trace") or [])
    reasoning = prediction.get("reasoning") or ""
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", reasoning)]
    by_n = {p.get("n"): p for p in passages}
    key = next((by_n[n] for n in cited if n in by_n), passages[0] if passages else None)
    return FactRow(
        claim_id=prediction["claim_id"], fact=prediction.get("claim_text", ""), score=prediction.get("score"),
        verdict=prediction.get("verdict"), key_evidence=key.get("document_title") if key else None,
        error=prediction.get("error"), reasoning=reasoning or None,
        passages=[by_n[n] for n in dict.fromkeys(cited) if n in by_n],
    )
