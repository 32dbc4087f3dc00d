"""Batch evaluation: run one system over many records of a task, concurrently, into a resumable
run directory.

``run_eval`` assesses the records not yet in ``OUT/predictions.jsonl`` (at most ``concurrency``
at a time, by one pool of workers), appends each result the moment it is ready, and finishes with
the task's outputs (metrics.json, report.md, plots). Killing it at any point and running it again
on the same directory ends with exactly one line per record and the same metrics as an
uninterrupted run. ``score_run`` re-scores an existing run directory (e.g. with a threshold taken
from a validation run). The task decides what a line holds and how a run is scored
(``claire.tasks``); the runner only orders the work and keeps the files.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence, get_args

from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from claire import __version__
from claire.config import Config
from claire.errors import ClaireError, ConfigError, DatasetError, redact
from claire.tasks.calibration import FILE as CALIBRATOR_FILE, METHODS as CALIBRATION_METHODS
from claire.evals.predictions import PredictionLog, load_predictions, read_run_config, write_run_config
from claire.files import append_jsonl, read_log
from claire.evals.reporting import read_metrics
from claire.evals.thresholds import resolve_threshold
from claire.llm.usage import track_usage
from claire.tasks.base import Task
from claire.tasks.records import COUNTING_SYSTEMS
from claire.tasks.registry import get_task
from claire.tasks.wikicollide.dataset import Split, infer_split


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


def run_task(stored: dict[str, Any] | None) -> Task:
    """The task a run directory was made for: its config.json's ``task``, else the ``agent.task``
    of its configuration (runs written before the field existed), else wikicollide."""
    stored = stored or {}
    return get_task(stored.get("task") or ((stored.get("config") or {}).get("agent") or {}).get("task"))


# Settings that do not change what a system answers: a run may resume with other values.
NEUTRAL_SETTINGS = {
    "eval.concurrency", "llm.max_concurrency", "llm.cache", "llm.refresh_cache", "llm.cache_path", "llm.api_key",
    "llm.api_key_env", "llm.record", "llm.prompt_header", "llm.timeout", "llm.max_attempts", "llm.retry_base_wait", "llm.retry_max_wait", "llm.stream",
    "llm.openai_client", "retrieval.qdrant_api_key", "retrieval.path", "agent.review", "retrieval.lock_timeout",
    "agent.max_fact_chars", "agent.calibration",
    "watch.stream_url", "watch.replay", "watch.api_url", "watch.wikis", "watch.namespaces", "watch.include_bots",
    "watch.titles", "watch.categories", "watch.edits_in_flight", "watch.index_every", "watch.user_agent",
    "llm.base_url",  # the same model served from another address (a fixed endpoint) may finish a run
    "preset",  # a name for the settings, which are compared one by one
}

# Settings an older CLAIRE did not record, with the value its runs behaved as if they had: a run
# directory written before a setting existed resumes when the setting keeps that value.
_LEGACY_VALUES = {"agent.snippet_chars": 400, "agent.finish_action": True}


def _upgraded(stored: dict[str, Any]) -> dict[str, Any]:
    """A run's stored config as it reads today: before presets, the default verifier was today's
    ``lenient`` variant, and settings added since keep the values those runs used."""
    if "preset" in stored:
        return stored
    prompts = dict(stored.get("prompts") or {})
    variants = dict(prompts.get("variants") or {})
    variants.setdefault("verifier", "lenient")
    return {**stored, "prompts": {**prompts, "variants": variants}}


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "variants":
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_differences(stored: dict[str, Any] | None, current: dict[str, Any] | None) -> list[str]:
    """Settings that changed between a run directory's config and this one (neutral ones ignored)."""
    if not stored or not current:
        return []
    old, new = _flatten(_upgraded(stored) if "prompts" in current else stored), _flatten(current)
    for key, value in _LEGACY_VALUES.items():
        if key in new:
            old.setdefault(key, value)
    for recorded in ("prompts_digest", "index_embedder"):  # recorded since; unknown for older runs
        if recorded not in old or recorded not in new:
            old.pop(recorded, None)
            new.pop(recorded, None)
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted(set(old) | set(new))
            if key not in NEUTRAL_SETTINGS and old.get(key) != new.get(key)]


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


def calibration_run(task: Task, system: str | None, calibrate_from: str | Path, method: str) -> list[dict[str, Any]]:
    """The predictions of the validation run ``--calibrate-from`` names, once the task, the method
    and the system can be calibrated at all (a ConfigError saying which cannot)."""
    if not task.threshold_protocol:
        raise ConfigError(f"--calibrate-from is for WikiCollide runs, not the {task.name} task")
    if method not in CALIBRATION_METHODS:
        raise ConfigError(f"unknown calibration method {method!r}; allowed: {', '.join(CALIBRATION_METHODS)}")
    if system in COUNTING_SYSTEMS:
        raise ConfigError(f"--calibrate-from: {system} scores are REFUTES counts, not scores in [0, 1]; nothing to calibrate")
    return load_predictions(check_source_run(Path(calibrate_from), "--calibrate-from"), task.line_model)


def check_source_run(path: Path, option: str) -> Path:
    """``path`` when it is a run directory holding predictions, else a ConfigError naming ``option``."""
    if not (path / "predictions.jsonl").is_file():
        raise ConfigError(f"{option} {path} is not a run directory of `claire eval` (no predictions.jsonl)")
    return path


def pending(records: Sequence[Any], done: dict[str, str | None], retry_errors: bool) -> list[Any]:
    """Records with no line yet (``done`` maps claim ids to their line's error), plus, with
    ``retry_errors``, those whose line is an error."""
    return [r for r in records if r.claim_id not in done or (retry_errors and done[r.claim_id] is not None)]


async def resumable_step(items: Sequence[Any], *, key: Callable[[Any], str], field: str, path: Path,
                         work: Callable[[Any], Awaitable[dict[str, Any]]], concurrency: int) -> dict[str, dict[str, Any]]:
    """One resumable step of a job over ``items``: the records of ``path`` (JSON lines, each naming
    its item in ``field``) are kept, and ``work`` runs — ``concurrency`` at a time — for every item
    without a record or whose record has an ``error``, each new record appended as it finishes.
    Returns the latest record of every item, by key."""
    done = {str(record[field]): record for record in read_log(path) if isinstance(record, dict) and field in record}
    todo = [item for item in items if key(item) not in done or done[key(item)].get("error")]
    lock = asyncio.Lock()

    async def one(item: Any) -> None:
        record = await work(item)
        async with lock:
            await asyncio.to_thread(append_jsonl, path, record)
            done[str(record[field])] = record

    await run_pool(todo, one, max(1, concurrency))
    return done


async def run_pool(items: Iterable[Any], work: Callable[[Any], Awaitable[None]], concurrency: int) -> None:
    """Run ``work`` over ``items`` with at most ``concurrency`` at a time; an error in one stops
    the others (``work`` turns the failures it expects into results of its own)."""
    queue = iter(items)

    async def worker() -> None:
        for item in queue:
            await work(item)

    workers = [asyncio.create_task(worker()) for _ in range(max(concurrency, 1))]
    try:
        await asyncio.gather(*workers)
    finally:
        for job in workers:
            job.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


class _Tally:
    """Running totals for the progress line."""

    def __init__(self) -> None:
        self.errors = 0
        self.tokens = 0
        self.cost: float | None = None

    def add(self, line: BaseModel) -> None:
        usage = getattr(line, "usage", None) or {}
        self.errors += getattr(line, "error", None) is not None
        self.tokens += int(usage.get("total_tokens") or 0)
        if usage.get("cost_usd") is not None:
            self.cost = (self.cost or 0.0) + usage["cost_usd"]

    def __str__(self) -> str:
        cost = "—" if self.cost is None else f"${self.cost:,.4f}"
        return f"errors {self.errors} · {self.tokens:,} tokens · {cost}"


async def _line(task: Task, system: Any, record: Any) -> BaseModel:
    """A system's line for one record; an unexpected exception becomes an error line."""
    start = time.perf_counter()
    with track_usage() as usage:
        try:
            result = await system.assess(record)
        except Exception as error:  # one broken record must not end the batch
            return task.failed_line(record, system.name, redact(f"{type(error).__name__}: {error}"), usage.to_dict(),
                                    time.perf_counter() - start)
    line = task.line(record, result)
    if hasattr(line, "usage") and not line.usage:
        line.usage = usage.to_dict()
    if getattr(line, "latency_s", 0) is None:
        line.latency_s = time.perf_counter() - start
    return line


def _threshold(task: Task, system: str, config_public: dict[str, Any] | None, threshold: float | None,
               threshold_from: str | Path | None) -> tuple[float, str | None]:
    """The threshold a run is scored with, and where it came from (None: the task's own setting)."""
    if task.threshold_protocol:
        return resolve_threshold(system, config_public=config_public, threshold=threshold, threshold_from=threshold_from)
    if threshold_from is not None:
        raise ConfigError(f"--threshold-from is for WikiCollide runs, not the {task.name} task")
    return (threshold if threshold is not None else task.default_threshold(config_public)), None


SPLITS: tuple[str, ...] = get_args(Split)


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
    if split is not None and split not in SPLITS:
        raise ConfigError(f"--split must be one of {', '.join(SPLITS)}, not {split!r}")
    stored = read_run_config(out_dir) or {}
    task = run_task(stored)
    predictions = load_predictions(out_dir, task.line_model)
    system = stored.get("system") or (predictions[0]["system"] if predictions else "?")
    if wall_time_s is None and (out_dir / "metrics.json").exists():
        wall_time_s = read_metrics(out_dir).get("wall_time_s")
    if threshold is not None and threshold > 1 and system not in COUNTING_SYSTEMS:
        raise ConfigError(f"--threshold {threshold:g} is above 1: {system}'s scores are in [0, 1] (only nli's threshold "
                          "is a count of REFUTES passages)")
    value, source = _threshold(task, system, stored.get("config"), threshold, threshold_from)
    metrics = task.score(predictions, threshold=value, system=system)
    metrics.update(split=split or stored.get("split"), wall_time_s=wall_time_s)
    if task.threshold_protocol:  # a WikiCollide run: its setup beside the paper's method
        from claire.tasks.wikicollide.report import describe_setup

        metrics["setup"] = describe_setup(stored.get("config") or {}, system)
    if calibrate_from is not None:
        from claire.tasks.wikicollide.scoring import recalibrate

        validation = calibration_run(task, system, calibrate_from, calibration_method)
        metrics["calibrated"], calibrator = recalibrate(predictions, validation, source=str(calibrate_from),
                                                        method=calibration_method)
        calibrator.save(out_dir / CALIBRATOR_FILE)
    if source is not None:
        metrics["threshold_source"] = source
        if metrics["split"] == "test" and threshold is None and threshold_from is None:
            metrics["threshold_hint"] = "the paper reuses the best-F1 threshold of the validation run on test (threshold_from)"
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
    task = task if isinstance(task, Task) else get_task(task or ((config_public or {}).get("agent") or {}).get("task"))
    ids = [record.claim_id for record in records]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(f"claim_id '{duplicate}' appears more than once; a run needs unique claim ids")
    out_dir = Path(out_dir)
    dataset = Path(dataset) if dataset is not None else None
    split = split or (infer_split(dataset) if dataset else None)
    library = getattr(system, "prompts", None)
    if config_public is not None and hasattr(library, "digest"):  # the prompt texts the run renders
        config_public = {**config_public, "prompts_digest": library.digest()}
    check_run_dir(out_dir, task=task, system=system.name, dataset=dataset, config_public=config_public)
    if threshold is not None or threshold_from is not None:  # fail before the run, not after it
        _threshold(task, system.name, config_public, threshold, threshold_from)
    if calibrate_from is not None:
        from claire.tasks.wikicollide.scoring import recalibrate

        validation = calibration_run(task, system.name, calibrate_from, calibration_method)
        recalibrate(validation, validation, source=str(calibrate_from), method=calibration_method)  # it can calibrate
    log = PredictionLog(out_dir, task.line_model)
    try:
        write_run_config(out_dir, {
            "task": task.name,
            "system": system.name,
            "dataset": str(dataset) if dataset else None,
            "split": split,
            "claims": len(records),
            "claire_version": __version__,
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "config": config_public,
        })
        todo = pending(records, {claim_id: line.error for claim_id, line in log.latest.items()}, retry_errors)
        tally = _Tally()
        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
            console=console, disable=not show_progress,
        )
        bar = progress.add_task(system.name, total=len(records), completed=len(records) - len(todo), stats=str(tally))

        async def work(record: Any) -> None:
            line = await _line(task, system, record)
            try:
                await log.append(line)
            except OSError as error:
                raise ClaireError(f"cannot write {log.path}: {error}") from None
            tally.add(line)
            progress.update(bar, advance=1, stats=str(tally))

        start = time.perf_counter()
        with progress:
            await run_pool(todo, work, min(concurrency, len(todo)))
        wall_time = time.perf_counter() - start
    finally:
        log.compact()
        log.close()
    metrics = score_run(out_dir, threshold=threshold, threshold_from=threshold_from, split=split, wall_time_s=wall_time,
                        calibrate_from=calibrate_from, calibration_method=calibration_method)
    wanted = set(ids)
    errors = Counter(line.error for line in log.latest.values() if line.claim_id in wanted and line.error is not None)
    return RunSummary(
        out_dir=out_dir, system=system.name, total=len(records), skipped=len(records) - len(todo), ran=len(todo),
        errors=sum(errors.values()), wall_time_s=wall_time, metrics=metrics,
        common_error=errors.most_common(1)[0][0] if errors else None,
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
    value, _ = resolve_threshold(system, threshold=threshold, threshold_from=threshold_from)
    return config.with_overrides({"baselines.nli_threshold" if system in COUNTING_SYSTEMS else "agent.threshold": value})


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
    return pending(claims, {line["claim_id"]: line["error"] for line in done}, retry_errors)
