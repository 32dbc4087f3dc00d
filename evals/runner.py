"""Batch evaluation: run one System over many claims, concurrently, into a resumable run directory.

``run_eval`` assesses the claims not yet in ``OUT/predictions.jsonl`` (at most ``concurrency``
at a time), appends each result the moment it is ready, and finishes with metrics.json,
report.md and roc.png. Killing it at any point and running it again on the same directory ends
with exactly one line per claim and the same metrics as an uninterrupted run. ``score_run``
re-scores an existing run directory (e.g. with a threshold taken from a validation run).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from claire import __version__
from claire.agent.system import Claim, System
from claire.agent.usage import track_usage
from claire.errors import ClaireError, ConfigError, DatasetError, redact
from claire.evals.dataset import infer_split
from claire.evals.metrics import compute_metrics, resolve_threshold
from claire.evals.predictions import (
    PREDICTIONS,
    Prediction,
    PredictionLog,
    load_predictions,
    prediction_from,
    read_run_config,
    write_run_config,
)
from claire.evals.reporting import read_metrics, write_run_outputs


@dataclass
class RunSummary:
    out_dir: Path
    system: str
    total: int  # claims asked for
    skipped: int  # already in the run directory
    ran: int  # assessed by this invocation
    errors: int  # claims of this run whose (latest) prediction is an error
    wall_time_s: float  # time spent assessing claims in this invocation
    metrics: dict[str, Any]


def _todo(claims: list[Claim], errors: dict[str, str | None], retry_errors: bool) -> list[Claim]:
    """Claims with no recorded prediction (``errors`` maps done claim_ids to their error), plus,
    with ``retry_errors``, those whose prediction is an error."""
    return [c for c in claims if c.claim_id not in errors or (retry_errors and errors[c.claim_id] is not None)]


def pending_claims(claims: list[Claim], out_dir: str | Path, *, retry_errors: bool = False) -> list[Claim]:
    """The claims a (resumed) run in ``out_dir`` still has to assess."""
    done = load_predictions(out_dir) if (Path(out_dir) / PREDICTIONS).exists() else []
    return _todo(claims, {p["claim_id"]: p["error"] for p in done}, retry_errors)


# Settings that do not change what a system answers: a run may resume with other values.
NEUTRAL_SETTINGS = {
    "eval.concurrency", "llm.max_concurrency", "llm.cache", "llm.refresh_cache", "llm.cache_path", "llm.api_key",
    "llm.api_key_env", "llm.timeout", "llm.max_attempts", "llm.retry_base_wait", "llm.retry_max_wait", "llm.stream",
    "retrieval.qdrant_api_key", "retrieval.path", "agent.review", "retrieval.lock_timeout", "agent.max_fact_chars",
}


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
    old, new = _flatten(stored), _flatten(current)
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted(set(old) | set(new))
            if key not in NEUTRAL_SETTINGS and old.get(key) != new.get(key)]


def _check_run_dir(out_dir: Path, system: str, dataset: Path | None, config_public: dict[str, Any] | None) -> None:
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


async def _assess(system: System, claim: Claim) -> Prediction:
    """A system's prediction for one claim; an unexpected exception becomes an error line."""
    start = time.perf_counter()
    with track_usage() as usage:
        try:
            assessment = await system.assess(claim)
        except Exception as error:  # one broken claim must not end the batch
            return Prediction(
                claim_id=claim.claim_id,
                system=system.name,
                claim_text=claim.text,
                label=claim.label,
                inconsistency_type=claim.inconsistency_type,
                usage=usage.to_dict(),
                latency_s=time.perf_counter() - start,
                error=redact(f"{type(error).__name__}: {error}"),
                gold=claim.gold,
            )
    prediction = prediction_from(assessment, claim)
    prediction.usage = prediction.usage or usage.to_dict()
    prediction.latency_s = prediction.latency_s if prediction.latency_s is not None else time.perf_counter() - start
    return prediction


def _score(
    out_dir: Path,
    system: str,
    threshold: tuple[float, str],
    *,
    split: str | None,
    wall_time_s: float | None,
    default_threshold: bool,
) -> dict[str, Any]:
    from claire.evals.feverous_metrics import run_task, score_feverous_run

    if run_task(out_dir) == "feverous":  # a three-way label and evidence, not a score: its own figures
        return score_feverous_run(out_dir, system=system, split=split, wall_time_s=wall_time_s)
    predictions = load_predictions(out_dir)
    metrics = compute_metrics(predictions, threshold=threshold[0], system=system)
    metrics.update(split=split, threshold_source=threshold[1], wall_time_s=wall_time_s)
    if split == "test" and default_threshold:
        metrics["threshold_hint"] = "the paper reuses the best-F1 threshold of the validation run on test (threshold_from)"
    write_run_outputs(out_dir, metrics, predictions)
    return metrics


def score_run(
    out_dir: str | Path,
    *,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
    split: str | None = None,
) -> dict[str, Any]:
    """Recompute and rewrite metrics.json, report.md and roc.png of an existing run directory."""
    out_dir = Path(out_dir)
    config = read_run_config(out_dir) or {}
    predictions = load_predictions(out_dir)
    system = config.get("system") or (predictions[0]["system"] if predictions else "?")
    resolved = resolve_threshold(
        system, config_public=config.get("config"), threshold=threshold, threshold_from=threshold_from
    )
    previous = read_metrics(out_dir) if (out_dir / "metrics.json").exists() else {}
    return _score(
        out_dir, system, resolved, split=split or config.get("split"), wall_time_s=previous.get("wall_time_s"),
        default_threshold=threshold is None and threshold_from is None,
    )


class _Tally:
    """Running totals for the progress line."""

    def __init__(self) -> None:
        self.errors = 0
        self.tokens = 0
        self.cost: float | None = None

    def add(self, prediction: Prediction) -> None:
        self.errors += prediction.error is not None
        self.tokens += int(prediction.usage.get("total_tokens") or 0)
        if prediction.usage.get("cost_usd") is not None:
            self.cost = (self.cost or 0.0) + prediction.usage["cost_usd"]

    def __str__(self) -> str:
        cost = "—" if self.cost is None else f"${self.cost:,.4f}"
        return f"errors {self.errors} · {self.tokens:,} tokens · {cost}"


async def run_eval(
    claims: list[Claim],
    system: System,
    out_dir: Path,
    *,
    concurrency: int = 4,
    config_public: dict[str, Any] | None = None,
    retry_errors: bool = False,
    split: str | None = None,
    dataset: str | Path | None = None,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
    show_progress: bool = True,
    console: Console | None = None,
) -> RunSummary:
    """Assess ``claims`` with ``system`` into ``out_dir`` (resuming what is there) and score them.

    ``split`` defaults to what the ``dataset`` file name says (dev/val -> validation, test);
    the threshold is ``threshold``, else the best-F1 threshold of the validation run directory
    ``threshold_from``, else the system's default from ``config_public``.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    ids = [claim.claim_id for claim in claims]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(f"claim_id '{duplicate}' appears more than once; a run needs unique claim ids")
    out_dir = Path(out_dir)
    dataset = Path(dataset) if dataset is not None else None
    split = split or (infer_split(dataset) if dataset else None)
    _check_run_dir(out_dir, system.name, dataset, config_public)
    resolved = resolve_threshold(system.name, config_public=config_public, threshold=threshold, threshold_from=threshold_from)
    log = PredictionLog(out_dir)
    write_run_config(out_dir, {
        "system": system.name,
        "dataset": str(dataset) if dataset else None,
        "split": split,
        "claims": len(claims),
        "claire_version": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": config_public,
    })
    todo = _todo(claims, {claim_id: p.error for claim_id, p in log.latest.items()}, retry_errors)
    tally = _Tally()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"),
        console=console,
        disable=not show_progress,
    )
    task = progress.add_task(system.name, total=len(claims), completed=len(claims) - len(todo), stats=str(tally))
    pending = iter(todo)

    async def worker() -> None:
        for claim in pending:
            prediction = await _assess(system, claim)
            try:
                await log.append(prediction)
            except OSError as error:
                raise ClaireError(f"cannot write {log.path}: {error}") from None
            tally.add(prediction)
            progress.update(task, advance=1, stats=str(tally))

    start = time.perf_counter()
    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(todo)))]
    try:
        with progress:
            await asyncio.gather(*workers)
    finally:
        for job in workers:
            job.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        log.compact()
        log.close()
    wall_time = time.perf_counter() - start
    metrics = _score(
        out_dir, system.name, resolved, split=split, wall_time_s=wall_time,
        default_threshold=threshold is None and threshold_from is None,
    )
    wanted = set(ids)
    return RunSummary(
        out_dir=out_dir,
        system=system.name,
        total=len(claims),
        skipped=len(claims) - len(todo),
        ran=len(todo),
        errors=sum(1 for p in log.latest.values() if p.claim_id in wanted and p.error is not None),
        wall_time_s=wall_time,
        metrics=metrics,
    )
