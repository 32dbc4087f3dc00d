"""The citations task: Side's measures on WAFER-style records, in a resumable run directory.

A record is a claim with its context and the source it cites. WAFER's own shape is read as
published (``input`` with the ``[CIT]`` mark, ``output[].answer`` — a URL or
``{Failed verification}`` — with ``output[].provenance[]`` holding the cited ``url``, ``title``
and ``text``, and ``meta.wikipedia_title``/``wikipedia_section``/``sentences``); so is a flat
shape ``{id, claim, context?, title?, section?, source_url?, source_title?, source_text, failed?}``.

``run_citation_eval`` checks each record with :class:`claire.agent.citation.CitationChecker`
and appends one line per record to ``predictions.jsonl`` (a re-run resumes), then writes
``metrics.json``, ``report.md`` and the plots: how often the original source is retrieved in the
top k (recall@k), how often the verifier ranks it first, and — when records mark citations that
failed verification — the precision-recall curve of detecting them from the support score.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from pydantic import BaseModel, Field
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

from claire import __version__
from claire.agent.citation import Citation, CitationChecker, CitedSource
from claire.errors import ClaireError, ConfigError, DatasetError
from claire.evals.predictions import PredictionLog, load_predictions, read_run_config, write_atomically, write_run_config
from claire.evals.runner import config_differences

TASK = "citations"
RECALL_KS = (1, 3, 5, 10, 20)
FAILED_MARK = "failed verification"
CIT = "[CIT]"


class CitationPrediction(BaseModel):
    """One line of a citations run's ``predictions.jsonl``."""

    claim_id: str
    system: str = "cite"
    claim_text: str = ""
    cited_url: str | None = None
    failed: bool | None = None  # gold: the citation failed verification
    score: float | None = None  # the original source's support score
    verdict: str | None = None
    original_rank: int | None = None  # among original + candidates after verification
    retrieval_rank: int | None = None  # the original's document rank in the search results
    suggestions: list[dict[str, Any]] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None


# -- reading records ----------------------------------------------------------------------------
def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _from_wafer(record: dict[str, Any], where: str) -> Citation:
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    text = _text(record.get("input"))
    sentences = [s for s in meta.get("sentences") or [] if isinstance(s, str) and s.strip()]
    claim = sentences[-1] if sentences else text
    claim = " ".join(claim.replace(CIT, " ").split())
    context = " ".join(text.replace(CIT, " ").split())
    if claim and context.endswith(claim):
        context = context[: -len(claim)].strip()
    outputs = record.get("output")
    if not isinstance(outputs, list) or not outputs:
        raise DatasetError(f"{where}: field 'output' must be a non-empty list (the cited source)")
    answers = [_text(o.get("answer")) for o in outputs if isinstance(o, dict)]
    provenance = next((p for o in outputs if isinstance(o, dict) for p in (o.get("provenance") or []) if isinstance(p, dict)), None)
    if provenance is None:
        raise DatasetError(f"{where}: no 'output[].provenance' entry names the cited source")
    if not _text(provenance.get("text")):
        raise DatasetError(f"{where}: the cited source has no text (WAFER ships URLs only: fill 'provenance.text' "
                           "with the page text, e.g. with Side's download script)")
    failed = any(FAILED_MARK in a.lower() for a in answers) if answers else None
    return Citation(
        claim_id=str(record.get("id")), claim=claim, title=_text(meta.get("wikipedia_title")),
        section=_text(meta.get("wikipedia_section")), context=context, failed=failed,
        source=CitedSource(text=provenance["text"], title=_text(provenance.get("title")),
                           url=_text(provenance.get("url")) or None),
    )


def _from_flat(record: dict[str, Any], where: str) -> Citation:
    text = record.get("source_text")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: field 'source_text' is missing or empty (the cited source's text)")
    failed = record.get("failed")
    if failed is not None and not isinstance(failed, bool):
        raise DatasetError(f"{where}: field 'failed' must be true, false or absent")
    return Citation(
        claim_id=str(record.get("id")), claim=" ".join(_text(record.get("claim")).replace(CIT, " ").split()),
        title=_text(record.get("title")), section=_text(record.get("section")), context=_text(record.get("context")),
        failed=failed, source=CitedSource(text=text, title=_text(record.get("source_title")),
                                          url=_text(record.get("source_url")) or None),
    )


def load_citations(path: str | Path) -> list[Citation]:
    """Read WAFER-style records (JSONL, or a JSON array). A bad record raises DatasetError
    naming the file and line (or record index) and the problem."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"citations file {path} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"cannot read citations file {path}: {error}") from None
    items: list[tuple[str, Any]] = []
    if raw.lstrip().startswith("["):
        try:
            items = [(f"{path}: record {i}", r) for i, r in enumerate(json.loads(raw))]
        except json.JSONDecodeError as error:
            raise DatasetError(f"{path}: invalid JSON ({error.msg} at line {error.lineno})") from None
    else:
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}:{number}: invalid JSON ({error.msg})") from None
    citations: list[Citation] = []
    seen: dict[str, str] = {}
    for where, record in items:
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        citation = _from_wafer(record, where) if "input" in record or "output" in record else _from_flat(record, where)
        if record.get("id") is None:
            citation.claim_id = where.rsplit(":", 1)[-1].replace(" record ", "").strip()
        if not citation.claim:
            raise DatasetError(f"{where}: the claim is empty (field 'input' or 'claim')")
        if citation.claim_id in seen:
            raise DatasetError(f"{where}: id '{citation.claim_id}' also appears at {seen[citation.claim_id]}")
        seen[citation.claim_id] = where
        citations.append(citation)
    if not citations:
        raise DatasetError(f"{path} holds no records")
    return citations


def select_records(records: list[Citation], *, ids: str | None, limit: int | None, dataset: Path) -> list[Citation]:
    """The records named by ``ids`` (comma-separated; an unknown id is an error), then the first ``limit``."""
    if ids:
        wanted = {i.strip() for i in ids.split(",") if i.strip()}
        unknown = sorted(wanted - {r.claim_id for r in records})
        if unknown:
            raise ConfigError(f"--ids names records not in {dataset}: {', '.join(unknown)}")
        records = [r for r in records if r.claim_id in wanted]
    return records[:limit] if limit is not None else records


# -- metrics, report, plots ---------------------------------------------------------------------
def citation_metrics(predictions: list[dict[str, Any]], *, threshold: float) -> dict[str, Any]:
    """Side's measures over a run's predictions (records with errors are counted, not scored)."""
    scored = [p for p in predictions if p.get("error") is None and p.get("score") is not None]
    n = len(scored)
    metrics: dict[str, Any] = {"task": TASK, "records": len(predictions), "scored": n,
                               "errors": len(predictions) - n, "threshold": threshold}
    ranks = [p.get("retrieval_rank") for p in scored]
    metrics["recall_at_k"] = {str(k): (sum(1 for r in ranks if r is not None and r <= k) / n if n else None) for k in RECALL_KS}
    metrics["original_ranks_first"] = sum(1 for p in scored if p.get("original_rank") == 1) / n if n else None
    verdicts: dict[str, int] = {}
    for p in scored:
        verdicts[p["verdict"]] = verdicts.get(p["verdict"], 0) + 1
    metrics["verdicts"] = verdicts
    labelled = [p for p in scored if p.get("failed") is not None]
    metrics["labelled"] = len(labelled)
    metrics["failed"] = sum(1 for p in labelled if p["failed"])
    detection: dict[str, Any] | None = None
    if labelled and 0 < metrics["failed"] < len(labelled):
        y = [int(p["failed"]) for p in labelled]
        risk = [1.0 - p["score"] for p in labelled]  # a low support score flags a failing citation
        flagged = [p["score"] < threshold for p in labelled]
        tp = sum(1 for f, t in zip(flagged, y) if f and t)
        precision = tp / sum(flagged) if any(flagged) else None
        recall = tp / sum(y)
        detection = {
            "average_precision": average_precision_score(y, risk),
            "auroc": roc_auc_score(y, risk),
            "precision": precision,
            "recall": recall,
            "f1": (2 * precision * recall / (precision + recall)) if precision and recall else 0.0,
            "base_rate": sum(y) / len(y),
        }
        passed = [p for p in labelled if not p["failed"]]
        detection["recall_at_k_passed"] = {
            str(k): sum(1 for p in passed if p.get("retrieval_rank") and p["retrieval_rank"] <= k) / len(passed)
            for k in RECALL_KS
        }
    metrics["failing_detection"] = detection
    return metrics


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def write_report(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    lines = [
        "# Citation verification", "",
        f"{metrics['scored']} of {metrics['records']} records scored ({metrics['errors']} errors); "
        f"support threshold {metrics['threshold']}.", "",
        "| measure | value (%) |", "|---|---|",
        *[f"| original source retrieved in top {k} (recall@{k}) | {_pct(v)} |" for k, v in metrics["recall_at_k"].items()],
        f"| verifier ranks the original first | {_pct(metrics['original_ranks_first'])} |",
    ]
    detection = metrics.get("failing_detection")
    if detection:
        lines += [
            f"| failing citations: average precision (base rate {_pct(detection['base_rate'])}) | {_pct(detection['average_precision'])} |",
            f"| failing citations: AUROC | {_pct(detection['auroc'])} |",
            f"| failing citations at the threshold: precision / recall / F1 | {_pct(detection['precision'])} / "
            f"{_pct(detection['recall'])} / {_pct(detection['f1'])} |",
        ]
    else:
        lines += ["", "No precision-recall curve: the file does not mark both passing and failing citations."]
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(metrics["verdicts"].items())), "",
              "| id | failed (gold) | support | verdict | retrieval rank | best suggestion |", "|---|---|---|---|---|---|"]
    for p in predictions:
        best = p["suggestions"][0] if p.get("suggestions") else None
        suggestion = f"{best['url'] or best['title']} ({best['score']:.2f})" if best else "—"
        score = "error" if p.get("score") is None else f"{p['score']:.2f}"
        lines.append(f"| {p['claim_id']} | {p.get('failed')} | {score} | {p.get('verdict') or '—'} | "
                     f"{p.get('retrieval_rank') or '—'} | {suggestion} |")
    write_atomically(out_dir / "report.md", "\n".join(lines) + "\n")


def write_plots(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> list[str]:
    """``recall_at_k.png`` always; ``pr_failing.png`` when the records are labelled both ways."""
    written = []
    figure = Figure(figsize=(5, 3.6))
    axes = figure.add_subplot()
    ks = [int(k) for k in metrics["recall_at_k"]]
    axes.plot(ks, [metrics["recall_at_k"][str(k)] or 0.0 for k in ks], marker="o")
    axes.set(xlabel="k (source documents)", ylabel="recall@k", ylim=(0, 1.02), xscale="log",
             title="original source retrieved in the top k")
    axes.set_xticks(ks, [str(k) for k in ks])
    figure.tight_layout()
    figure.savefig(out_dir / "recall_at_k.png", dpi=120)
    written.append("recall_at_k.png")
    detection = metrics.get("failing_detection")
    if detection:
        labelled = [p for p in predictions if p.get("error") is None and p.get("score") is not None and p.get("failed") is not None]
        precision, recall, _ = precision_recall_curve([int(p["failed"]) for p in labelled], [1 - p["score"] for p in labelled])
        figure = Figure(figsize=(5, 4))
        axes = figure.add_subplot()
        axes.step(recall, precision, where="post", label=f"AP {100 * detection['average_precision']:.1f}")
        axes.axhline(detection["base_rate"], linestyle="--", color="grey", label="chance")
        axes.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02),
                 title="detecting citations that fail verification")
        axes.legend(loc="lower left")
        figure.tight_layout()
        figure.savefig(out_dir / "pr_failing.png", dpi=120)
        written.append("pr_failing.png")
    return written


def score_citation_run(out_dir: str | Path, *, threshold: float) -> dict[str, Any]:
    """Recompute metrics.json, report.md and the plots of a citations run from its predictions."""
    out_dir = Path(out_dir)
    predictions = load_predictions(out_dir, CitationPrediction)
    metrics = citation_metrics(predictions, threshold=threshold)
    metrics["plots"] = write_plots(out_dir, metrics, predictions)
    write_atomically(out_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    write_report(out_dir, metrics, predictions)
    return metrics


# -- the run ------------------------------------------------------------------------------------
@dataclass
class CitationRunSummary:
    out_dir: Path
    total: int
    skipped: int
    ran: int
    errors: int
    wall_time_s: float
    metrics: dict[str, Any]


async def _check(checker: CitationChecker, citation: Citation) -> CitationPrediction:
    started = time.perf_counter()
    base = {"claim_id": citation.claim_id, "claim_text": citation.claim, "cited_url": citation.source.url,
            "failed": citation.failed}
    try:
        result = await checker.check(citation)
    except Exception as error:  # one broken record must not end the batch
        return CitationPrediction(**base, latency_s=time.perf_counter() - started, error=f"{type(error).__name__}: {error}")
    return CitationPrediction(
        **base, score=result.original.score, verdict=result.verdict, original_rank=result.original.rank,
        retrieval_rank=result.original.retrieval_rank, queries=result.queries, usage=result.usage,
        suggestions=[{"url": s.url, "title": s.title, "score": s.score, "rank": s.rank} for s in result.suggestions],
        latency_s=result.latency_s, error=result.error,
    )


def _check_run_dir(out_dir: Path, dataset: Path, config_public: dict[str, Any] | None) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file; give a directory for the run")
    existing = read_run_config(out_dir)
    if existing is None:
        return
    if existing.get("task") != TASK:
        raise ConfigError(f"{out_dir} holds a run of another task; choose another --out for the citations task")
    changed = config_differences(existing.get("config"), config_public)
    if changed:
        raise ConfigError(f"{out_dir} holds a run made with other settings ({'; '.join(changed[:5])}); resuming would "
                          "mix them: use the same settings, or another --out")
    if existing.get("dataset") and Path(existing["dataset"]).name != dataset.name:
        raise ConfigError(f"{out_dir} holds a run on {existing['dataset']}, not {dataset}: choose another --out")


async def run_citation_eval(
    citations: list[Citation],
    checker: CitationChecker,
    out_dir: Path,
    *,
    dataset: Path,
    concurrency: int = 4,
    config_public: dict[str, Any] | None = None,
    retry_errors: bool = False,
    show_progress: bool = True,
    console: Console | None = None,
) -> CitationRunSummary:
    """Check the records not yet in ``out_dir`` (``concurrency`` at a time), append each result at
    once, then score the whole run. Re-running the same command resumes it."""
    out_dir = Path(out_dir)
    _check_run_dir(out_dir, dataset, config_public)
    log = PredictionLog(out_dir, CitationPrediction)
    write_run_config(out_dir, {
        "task": TASK, "system": checker.name, "dataset": str(dataset), "records": len(citations),
        "claire_version": __version__, "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": config_public,
    })
    todo = [c for c in citations if c.claim_id not in log.latest
            or (retry_errors and log.latest[c.claim_id].error is not None)]
    progress = Progress(TextColumn("[bold]citations"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, disable=not show_progress)
    task = progress.add_task("citations", total=len(citations), completed=len(citations) - len(todo))
    pending = iter(todo)

    async def worker() -> None:
        for citation in pending:
            prediction = await _check(checker, citation)
            try:
                await log.append(prediction)
            except OSError as error:
                raise ClaireError(f"cannot write {log.path}: {error}") from None
            progress.advance(task)

    started = time.perf_counter()
    workers = [asyncio.create_task(worker()) for _ in range(min(max(concurrency, 1), len(todo)))]
    try:
        with progress:
            await asyncio.gather(*workers)
    finally:
        for job in workers:
            job.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        log.compact()
        log.close()
    wall = time.perf_counter() - started
    metrics = score_citation_run(out_dir, threshold=checker.settings.threshold)
    metrics["wall_time_s"] = round(wall, 3)
    write_atomically(out_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    wanted = {c.claim_id for c in citations}
    return CitationRunSummary(
        out_dir=out_dir, total=len(citations), skipped=len(citations) - len(todo), ran=len(todo),
        errors=sum(1 for p in log.latest.values() if p.claim_id in wanted and p.error is not None),
        wall_time_s=wall, metrics=metrics,
    )


def describe_run(summary: CitationRunSummary) -> list[str]:
    """What a finished run prints: counts, recall@k, ranked first, failing-citation detection."""
    metrics = summary.metrics
    recall = ", ".join(f"@{k} {100 * v:.0f}%" for k, v in metrics["recall_at_k"].items() if v is not None)
    first = metrics["original_ranks_first"]
    lines = [
        f"citations on {summary.total} records ({summary.ran} run now, {summary.skipped} already done, "
        f"{summary.errors} errors) in {summary.wall_time_s:.1f} s",
        f"original source retrieved: {recall or '—'}; ranked first by the verifier: "
        f"{'—' if first is None else f'{100 * first:.0f}%'}",
    ]
    detection = metrics.get("failing_detection")
    if detection:
        lines.append(f"failing citations: average precision {100 * detection['average_precision']:.1f} "
                     f"(base rate {100 * detection['base_rate']:.0f}%), AUROC {100 * detection['auroc']:.1f}")
    lines.append(f"wrote {summary.out_dir}/predictions.jsonl, metrics.json, report.md, " + ", ".join(metrics.get("plots", [])))
    return lines
