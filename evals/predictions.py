"""A run directory's files: ``config.json`` and the append-only ``predictions.jsonl``.

Each finished claim appends one complete line with a single ``os.write`` on an ``O_APPEND``
descriptor, then fsyncs, so a run killed at any moment leaves whole lines plus at most one torn
last line. Reading ignores a torn last line; opening the log for appending cuts it away first.
When a claim has several lines (a retried error), the last one counts.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from claire.agent.system import Assessment, Claim
from claire.errors import ConfigError, DatasetError, redact
from claire.validation import describe

PREDICTIONS = "predictions.jsonl"
CONFIG = "config.json"


class Prediction(BaseModel):
    """One line of ``predictions.jsonl``: a system's answer for one claim, with its gold label."""

    claim_id: str
    system: str
    claim_text: str = ""
    score: float | None = None
    verdict: str | None = None
    threshold: float | None = None
    label: str | None = None
    inconsistency_type: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
    reasoning: str | None = None
    trace: list[dict[str, Any]] = Field(default_factory=list)
    # task "feverous": the predicted three-way label and evidence element ids, and the gold answer
    predicted_label: str | None = None
    predicted_evidence: list[str] = Field(default_factory=list)
    gold: dict[str, Any] | None = None


def prediction_from(assessment: Assessment, claim: Claim) -> Prediction:
    return Prediction(
        claim_id=claim.claim_id,
        system=assessment.system,
        claim_text=claim.text,
        score=assessment.score,
        verdict=assessment.verdict,
        threshold=assessment.threshold,
        label=claim.label,
        inconsistency_type=claim.inconsistency_type,
        evidence_ids=[item.block_id for item in assessment.evidence],
        usage=assessment.usage,
        latency_s=assessment.latency_s,
        error=assessment.error,
        reasoning=assessment.reasoning,
        trace=[step.model_dump(mode="json") for step in assessment.trace],
        predicted_label=assessment.label,
        predicted_evidence=list(assessment.evidence_elements),
        gold=claim.gold,
    )


def _read(path: Path, model: type[BaseModel] = Prediction) -> tuple[dict[str, Any], int, int, bool]:
    """(last prediction per claim_id, lines read, bytes of whole valid lines, last line lacks \\n).

    A torn last line (cut short, or not valid) is left out; an invalid line elsewhere is an error.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, 0, 0, False
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error}") from None
    latest: dict[str, Prediction] = {}
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    good = 0
    count = 0
    for number, line in enumerate(lines, start=1):
        last = number == len(lines)
        if not line.strip():
            good += len(line) + 1
            continue
        try:
            prediction = model.model_validate_json(line)
        except ValidationError as error:
            if last:
                return latest, count, good, False
            raise DatasetError(f"{path}: line {number}: {describe(error)}") from None
        latest[prediction.claim_id] = prediction
        count += 1
        good += len(line) + 1
    missing_newline = bool(data) and not data.endswith(b"\n")
    return latest, count, min(good, len(data)), missing_newline


def load_predictions(run_dir: str | Path, model: type[BaseModel] = Prediction) -> list[dict[str, Any]]:
    """The predictions of a run directory (or a predictions.jsonl path): one per claim, the last
    line of each claim_id winning, a torn last line ignored. ``model`` is the line's schema."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / PREDICTIONS
    if not path.is_file():
        raise ConfigError(f"no predictions at {path}: run `claire eval ... --out DIR` first")
    latest, _, _, _ = _read(path, model)
    return [prediction.model_dump(mode="json") for prediction in latest.values()]


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
        self.latest, self._lines, good, missing_newline = _read(self.path, model)
        if self.path.exists() and (good < self.path.stat().st_size or missing_newline):
            with open(self.path, "r+b") as handle:
                handle.truncate(good)
                if missing_newline:  # a complete last record whose newline never made it
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"\n")
                handle.flush()
                os.fsync(handle.fileno())
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = asyncio.Lock()

    async def append(self, prediction: BaseModel) -> None:
        line = (redact(prediction.model_dump_json()) + "\n").encode("utf-8")  # no key or URL password on disk
        async with self._lock:
            await asyncio.to_thread(self._write, line)
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
        payload = b"".join((p.model_dump_json() + "\n").encode("utf-8") for p in self.latest.values())
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
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._lines = len(self.latest)

    def close(self) -> None:
        os.close(self._fd)
        os.close(self._lock_fd)  # releases the run-directory lock


def read_run_config(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not readable JSON ({error}); delete it or use another --out") from None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader never sees half a file."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def write_run_config(run_dir: str | Path, data: dict[str, Any]) -> None:
    path = Path(run_dir) / CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
