"""Batch evaluation: run one system over many records of a task, concurrently, into a resumable
run directory.

``run_eval`` submits the records to the executor (:mod:`claire.runs.executor`) with the run
directory as its sink: the records not yet in ``OUT/predictions.jsonl`` are checked (at most
``concurrency`` at a time), each result appended the moment it is ready, and it finishes with
the task's outputs (metrics.json, report.md, plots). Killing it at any point and running it again
on the same directory ends with exactly one line per record and the same metrics as an
uninterrupted run. ``score_run`` re-scores an existing run directory (e.g. with a threshold taken
from a validation run). The task decides what a line holds and how a run is scored
(``claire.tasks``); the runner only orders the work and keeps the files.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from functools import lru_cache
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from claire import __version__
from claire.config import PRESETS, Config
from claire.agent.registry import needs_llm, reads_setting, score_kind
from claire.domain import ScoreKind
from claire.errors import ClaireError, ConfigError, DatasetError
from claire.runs.executor import Executor, RecordResult, todo
from claire.runs.predictions import (
    PredictionLog, load_predictions, read_records, read_run_config, record_digest, write_records, write_run_config,
)
from claire.evals.reporting import NEUTRAL_SETTINGS, flat_settings, read_metrics
from claire.evals.thresholds import resolve_threshold, threshold_setting
from claire.tasks.base import Task
from claire.tasks.calibration import FILE as CALIBRATOR_FILE, METHODS as CALIBRATION_METHODS
from claire.tasks.registry import get_task


@dataclass
class RunSummary:
    """What one invocation of a run did, and the run's metrics."""

    out_dir: Path
    system: str
    total: int  # records asked for
    skipped: int  # already in the run directory
    ran: int  # assessed by this invocation
    errors: int  # records of this run whose (latest) line is an error
    wall_time_s: float  # time spent assessing records in this invocation
    metrics: dict[str, Any]
    common_error: str | None = None  # the error most records of this run ended in
    changed: int = 0  # records edited since their prediction (run again)
    left_out: int = 0  # predictions in the directory of records this run was not asked for (not scored)


def run_task(stored: dict[str, Any] | None) -> Task:
    """The task a run directory was made for: its config.json's ``task``, else the ``agent.task``
    of its configuration (runs written before the field existed), else wikicollide."""
    stored = stored or {}
    return get_task(stored.get("task") or ((stored.get("config") or {}).get("agent") or {}).get("task"))


def run_score_kind(stored: dict[str, Any] | None, predictions: Sequence[dict[str, Any]] = ()) -> ScoreKind:
    """What a run's scores are: as its config.json or its lines record it, else (a run written
    before it was recorded) as its system declares."""
    stored = stored or {}
    recorded = stored.get("score_kind") or next((line.get("score_kind") for line in predictions if line.get("score_kind")), None)
    return recorded or score_kind(stored.get("system") or (predictions[0].get("system") if predictions else None))


# Settings an older CLAIRE did not record, with the value its runs behaved as if they had: a run
# directory written before a setting existed resumes when the setting keeps that value.
_LEGACY_VALUES = {"agent.snippet_chars": 400, "agent.finish_action": True}


def _upgraded(stored: dict[str, Any]) -> dict[str, Any]:
    """A run's stored config as it reads today: before presets, the default prompts were today's
    practical variants (the ``lenient`` verifier and the rest), and settings added since keep the
    values those runs used."""
    if "preset" in stored:
        return stored
    prompts = dict(stored.get("prompts") or {})
    variants = dict(prompts.get("variants") or {})
    for template, variant in PRESETS["practical"]["prompts"]["variants"].items():
        variants.setdefault(template, variant)
    return {**stored, "prompts": {**prompts, "variants": variants}}


def config_differences(stored: dict[str, Any] | None, current: dict[str, Any] | None) -> list[str]:
    """Settings that changed between a run directory's config and this one (neutral ones ignored)."""
    if not stored or not current:
        return []
    old, new = flat_settings(_upgraded(stored) if "prompts" in current else stored), flat_settings(current)
    for key, value in _LEGACY_VALUES.items():
        if key in new:
            old.setdefault(key, value)
    for recorded in ("prompts_digest", "index_embedder"):  # recorded since; unknown for older runs
        if recorded not in old or recorded not in new:
            old.pop(recorded, None)
            new.pop(recorded, None)
    defaults = _default_settings()
    for key in set(new) - set(old):  # a setting added since the run, at its default: the run used that too
        if key in defaults and defaults[key] == new[key]:
            old[key] = new[key]
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted(set(old) | set(new))
            if key not in NEUTRAL_SETTINGS and old.get(key) != new.get(key)]


@lru_cache(maxsize=1)
def _default_settings() -> dict[str, Any]:
    from claire.config import Config

    return flat_settings(json.loads(Config().model_dump_json()))


def check_run_dir(out_dir: Path, *, task: Task, system: str, dataset: Path | None, config_public: dict[str, Any] | None) -> None:
    """Refuse to resume a run directory made for another task, system, dataset or settings."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file; give a directory for the run")
    existing = read_run_config(out_dir)
    if existing is None:
        return
    changed = config_differences(existing.get("config"), config_public)
    if changed:
        raise ConfigError(
            f"{out_dir} holds a run made with other settings ({'; '.join(changed[:5])}); resuming would mix "
            "them: use the same settings, or another --out"
        )
    if run_task(existing).name != task.name:
        raise ConfigError(f"{out_dir} holds a run of another task; choose another --out for the {task.name} task")
    if existing.get("system") not in (None, system):
        raise ConfigError(
            f"{out_dir} holds a run of '{existing['system']}', not '{system}': one system per run "
            "directory; choose another --out"
        )
    previous = existing.get("dataset")
    if previous and dataset and Path(previous).name != dataset.name:
        raise ConfigError(
            f"{out_dir} holds a run on {previous}, not {dataset}: one dataset per run directory; choose another --out"
        )


def calibration_run(task: Task, system: str | None, kind: ScoreKind, calibrate_from: str | Path,
                    method: str) -> list[dict[str, Any]]:
    """The predictions of the validation run ``--calibrate-from`` names, once the task, the method
    and the scores can be calibrated at all (a ConfigError saying which cannot)."""
    if not task.threshold_protocol:
        raise ConfigError(f"--calibrate-from is for WikiCollide runs, not the {task.name} task")
    if method not in CALIBRATION_METHODS:
        raise ConfigError(f"unknown calibration method {method!r}; allowed: {', '.join(CALIBRATION_METHODS)}")
    if kind == "count":
        raise ConfigError(f"--calibrate-from: {system} scores are counts (of REFUTES passages), not scores in [0, 1]; "
                          "nothing to calibrate")
    return load_predictions(check_source_run(Path(calibrate_from), "--calibrate-from"), task.line_model)


def check_source_run(path: Path, option: str) -> Path:
    """``path`` when it is a run directory holding predictions, else a ConfigError naming ``option``."""
    if not (path / "predictions.jsonl").is_file():
        raise ConfigError(f"{option} {path} is not a run directory of `claire eval` (no predictions.jsonl)")
    return path


class _Tally:
    """Running totals for the progress line."""

    def __init__(self) -> None:
        self.errors = 0
        self.tokens = 0
        self.cached_tokens = 0  # the tokens of answers CLAIRE's cache served (their first call's)
        self.cost: float | None = None

    def add(self, line: BaseModel) -> None:
        usage = getattr(line, "usage", None) or {}
        self.errors += getattr(line, "error", None) is not None
        self.tokens += int(usage.get("total_tokens") or 0)
        self.cached_tokens += int(usage.get("cached_prompt_tokens") or 0) + int(usage.get("cached_completion_tokens") or 0)
        if usage.get("cost_usd") is not None:
            self.cost = (self.cost or 0.0) + usage["cost_usd"]

    def __str__(self) -> str:
        cost = "—" if self.cost is None else f"${self.cost:,.4f}"
        cached = f" (+{self.cached_tokens:,} from the cache)" if self.cached_tokens else ""
        return f"errors {self.errors} · {self.tokens:,} tokens{cached} · {cost}"


def _line(task: Task, system_name: str, outcome: RecordResult) -> BaseModel:
    """A run's line for one checked record (a check that broke is an error line)."""
    if outcome.result is None:
        return task.failed_line(outcome.record, system_name, outcome.error or "no answer", outcome.usage,
                                outcome.latency_s)
    line = task.line(outcome.record, outcome.result)
    if hasattr(line, "usage") and not line.usage:
        line.usage = outcome.usage
    if getattr(line, "latency_s", 0) is None:
        line.latency_s = outcome.latency_s
    return line


class RunDirectorySink:
    """The executor's sink for a run directory: each outcome becomes a line of ``predictions.jsonl``
    (the task decides its shape), counted on the progress line."""

    def __init__(self, log: PredictionLog, task: Task, system_name: str, on_line: Any = None):
        self.log = log
        self.task = task
        self.system_name = system_name
        self.on_line = on_line

    def finished(self) -> dict[str, str | None]:
        """The claim ids with a line, each with its latest line's error."""
        return {claim_id: line.error for claim_id, line in self.log.latest.items()}

    def started(self, key: str) -> None:
        """Nothing to note: a line is written when the check ends."""

    def step(self, key: str) -> None:
        """Nobody hears a batch run's steps (its trace is in the line)."""
        return None

    async def put(self, outcome: RecordResult) -> None:
        """Append the outcome's line."""
        line = _line(self.task, self.system_name, outcome)
        try:
            await self.log.append(line)
        except OSError as error:
            raise ClaireError(f"cannot write {self.log.path}: {error}") from None
        if self.on_line is not None:
            self.on_line(line)


def _threshold(task: Task, system: str, config_public: dict[str, Any] | None, threshold: float | None,
               threshold_from: str | Path | None) -> tuple[float, str | None]:
    """The threshold a run is scored with, and where it came from (None: the task's own setting)."""
    if task.threshold_protocol:
        return resolve_threshold(system, task=task, config_public=config_public, threshold=threshold,
                                 threshold_from=threshold_from)
    if threshold_from is not None:
        raise ConfigError(f"--threshold-from is for WikiCollide runs, not the {task.name} task")
    return (threshold if threshold is not None else task.default_threshold(config_public)), None


def score_run(
    out_dir: str | Path,
    *,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
    split: str | None = None,
    wall_time_s: float | None = None,
    calibrate_from: str | Path | None = None,
    calibration_method: str = "isotonic",
) -> dict[str, Any]:
    """Recompute and rewrite the outputs (metrics.json, report.md, plots) of a run directory;
    ``calibrate_from``: a validation run whose scores calibrate this run's (``calibration_method``:
    isotonic or platt; the calibrator is kept as calibrator.json)."""
    out_dir = Path(out_dir)
    if threshold is not None and not (math.isfinite(threshold) and threshold >= 0):
        raise ConfigError(f"--threshold must be a finite number of at least 0, not {threshold}")
    stored = read_run_config(out_dir) or {}
    task = run_task(stored)
    if split is not None and split not in task.splits:
        raise ConfigError(f"--split must be one of {', '.join(task.splits) or '(none: the task has no splits)'}, "
                          f"not {split!r}")
    predictions = load_predictions(out_dir, task.line_model)
    asked = read_records(out_dir)  # the records of the latest run: its scores cover them alone
    left_out = 0
    if asked is not None:
        kept = [p for p in predictions if p["claim_id"] in asked]
        left_out, predictions = len(predictions) - len(kept), kept
    system = stored.get("system") or (predictions[0]["system"] if predictions else "?")
    kind = run_score_kind(stored, predictions)
    if wall_time_s is None and (out_dir / "metrics.json").exists():
        wall_time_s = read_metrics(out_dir).get("wall_time_s")
    if threshold is not None and kind == "probability" and threshold > 1:
        raise ConfigError(f"--threshold {threshold:g} is above 1: {system}'s scores are in [0, 1] (only a count's "
                          "threshold, such as nli's REFUTES passages, may exceed 1)")
    value, source = _threshold(task, system, stored.get("config"), threshold, threshold_from)
    metrics = task.score(predictions, threshold=value, system=system, score_kind=kind)
    metrics.update(split=split or stored.get("split"), wall_time_s=wall_time_s)
    if left_out:
        metrics["not_in_dataset"] = left_out  # kept in predictions.jsonl, left out of these scores
    configured = ((stored.get("config") or {}).get("agent") or {}).get("system") or system  # module:Class, not its display name
    setup_config = stored.get("config") or {}
    if not needs_llm(configured) and isinstance(setup_config.get("retrieval"), dict):  # it searched without RankGPT
        setup_config = {**setup_config, "retrieval": {**setup_config["retrieval"], "rerank": False}}
    setup = task.setup(setup_config, lambda key: reads_setting(configured, key))
    if setup is not None:
        metrics["setup"] = setup
    if calibrate_from is not None:
        validation = calibration_run(task, system, kind, calibrate_from, calibration_method)
        metrics["calibrated"], calibrator = task.calibrate(predictions, validation, source=str(calibrate_from),
                                                           method=calibration_method)
        calibrator.save(out_dir / CALIBRATOR_FILE)
    if source is not None:
        metrics["threshold_source"] = source
        if metrics["split"] == "test" and threshold is None and threshold_from is None:
            metrics["threshold_hint"] = ("no validation run was given to take the threshold from (threshold_from): the "
                                         "paper scores a test split at the best validation F1 over a 0.1 grid")
    task.write_outputs(out_dir, metrics, predictions)
    return metrics


async def run_eval(
    records: Sequence[Any],
    system: Any,
    out_dir: Path,
    *,
    task: Task | str | None = None,
    concurrency: int = 4,
    config_public: dict[str, Any] | None = None,
    retry_errors: bool = False,
    split: str | None = None,
    dataset: str | Path | None = None,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
    calibrate_from: str | Path | None = None,
    calibration_method: str = "isotonic",
    show_progress: bool = True,
    console: Console | None = None,
) -> RunSummary:
    """Assess ``records`` with ``system`` into ``out_dir`` (resuming what is there) and score them.

    ``task`` defaults to the ``agent.task`` of ``config_public``; ``split`` to what the ``dataset``
    file name says (dev/val -> validation, test); the threshold is ``threshold``, else the best-F1
    threshold of the validation run directory ``threshold_from``, else the system's default.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    executor = Executor.for_config(config_public or {}, concurrency)
    task = task if isinstance(task, Task) else get_task(task or ((config_public or {}).get("agent") or {}).get("task"))
    ids = [record.claim_id for record in records]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(f"claim_id '{duplicate}' appears more than once; a run needs unique claim ids")
    out_dir = Path(out_dir)
    dataset = Path(dataset) if dataset is not None else None
    split = split or (task.split_of(dataset) if dataset else None)
    library = getattr(system, "prompts", None)
    if config_public is not None and hasattr(library, "digest"):  # the prompt texts the run renders
        config_public = {**config_public, "prompts_digest": library.digest()}
    check_run_dir(out_dir, task=task, system=system.name, dataset=dataset, config_public=config_public)
    if threshold is not None or threshold_from is not None:  # fail before the run, not after it
        _threshold(task, system.name, config_public, threshold, threshold_from)
    kind = getattr(system, "score_kind", None) or score_kind(system.name)
    if show_progress or console is not None:  # said once, before the run
        for notice in task.notices(config_public or {}, split=split,
                                   threshold_given=threshold is not None or threshold_from is not None):
            (console or Console(stderr=True)).print(f"[yellow]note:[/] {escape(notice)}")
    if calibrate_from is not None:
        validation = calibration_run(task, system.name, kind, calibrate_from, calibration_method)
        task.calibrate(validation, validation, source=str(calibrate_from), method=calibration_method)  # it can calibrate
    log = PredictionLog(out_dir, task.line_model)
    try:
        write_run_config(out_dir, {
            "task": task.name,
            "system": system.name,
            "score_kind": kind,
            "dataset": str(dataset) if dataset else None,
            "split": split,
            "claims": len(records),
            "claire_version": __version__,
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "config": config_public,
        })
        digests = {record.claim_id: record_digest(record) for record in records}
        before = read_records(out_dir) or {}
        # a record edited under the same id (text, context, label) is run again: its old line goes
        changed = {claim_id for claim_id, digest in digests.items()
                   if claim_id in log.latest and claim_id in before and before[claim_id] != digest}
        log.forget(changed)
        write_records(out_dir, digests)
        tally = _Tally()
        pending = todo(records, {claim_id: line.error for claim_id, line in log.latest.items()},
                       key=lambda record: record.claim_id, retry_errors=retry_errors)
        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
            console=console, disable=not show_progress,
        )
        bar = progress.add_task(system.name, total=len(records), completed=len(records) - len(pending), stats=str(tally))

        def counted(line: BaseModel) -> None:
            tally.add(line)
            progress.update(bar, advance=1, stats=str(tally))

        sink = RunDirectorySink(log, task, system.name, on_line=counted)
        start = time.perf_counter()
        with progress:
            await executor.run(system, pending, sink, retry_errors=retry_errors)
        wall_time = time.perf_counter() - start
    finally:
        log.compact()
        log.close()
    metrics = score_run(out_dir, threshold=threshold, threshold_from=threshold_from, split=split, wall_time_s=wall_time,
                        calibrate_from=calibrate_from, calibration_method=calibration_method)
    wanted = set(ids)
    errors = Counter(line.error for line in log.latest.values() if line.claim_id in wanted and line.error is not None)
    return RunSummary(
        out_dir=out_dir, system=system.name, total=len(records), skipped=len(records) - len(pending), ran=len(pending),
        errors=sum(errors.values()), wall_time_s=wall_time, metrics=metrics,
        common_error=errors.most_common(1)[0][0] if errors else None, changed=len(changed),
        left_out=metrics.get("not_in_dataset") or 0,
    )


def select_records(records: list[Any], *, ids: str | None, limit: int | None, source: str | Path) -> list[Any]:
    """The records named by ``ids`` (comma-separated; an unknown id is an error), then the first ``limit``."""
    if ids is not None:
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        if not wanted:
            raise ConfigError("--ids lists no claim ids; give them comma-separated, e.g. --ids 12,57")
        unknown = sorted(set(wanted) - {r.claim_id for r in records})
        if unknown:
            raise ConfigError(f"--ids names claims not in {source}: {', '.join(unknown)}")
        records = [r for r in records if r.claim_id in set(wanted)]
    return records[:limit] if limit is not None else records


def with_threshold(task: Task, config: Config, threshold: float | None, threshold_from: str | Path | None) -> Config:
    """The configuration with the threshold a run was asked for (given, or the best-F1 one of a
    validation run): the systems decide their verdicts with it, and config.json records it."""
    if threshold is None and threshold_from is None:
        return config
    if task.threshold_setting is not None:
        if threshold_from is not None:
            raise ConfigError(f"--threshold-from is for WikiCollide runs, not the {task.name} task")
        return config.with_overrides({task.threshold_setting: threshold})
    system = config.agent.system
    value, _ = resolve_threshold(system, task=task, threshold=threshold, threshold_from=threshold_from)
    return config.with_overrides({threshold_setting(score_kind(system)): value})


def failure(summary: RunSummary, max_error_share: float, records_name: str = "claims") -> str | None:
    """Why a finished run counts as failed (every record, or more than ``max_error_share`` of them,
    ended in an error), or None."""
    if not summary.total:
        return None
    cause = f" (the most common error: {summary.common_error})" if summary.common_error else ""
    if summary.errors >= summary.total:
        return f"no {records_name[:-1]} could be scored{cause}; see the error column of predictions.jsonl"
    if summary.errors / summary.total > max_error_share:
        return (f"{summary.errors} of {summary.total} {records_name} ended in an error (more than eval.max_error_share = "
                f"{max_error_share:.0%}){cause}; the metrics cover only the rest. See the error column of predictions.jsonl, "
                "fix the cause and re-run with --retry-errors")
    return None


def pending_claims(claims: list[Any], out_dir: str | Path, *, retry_errors: bool = False) -> list[Any]:
    """The records a (resumed) run in ``out_dir`` still has to assess."""
    path = Path(out_dir) / "predictions.jsonl"
    done = load_predictions(out_dir) if path.exists() else []
    return todo(claims, {line["claim_id"]: line["error"] for line in done}, key=lambda record: record.claim_id,
                retry_errors=retry_errors)
