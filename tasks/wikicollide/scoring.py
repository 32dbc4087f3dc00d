"""Scoring a WikiCollide run's predictions as the paper does (scikit-learn underneath).

AUROC is the primary metric (positive class: ``inconsistent``; the score is the system's
inconsistency score, for the NLI pipeline the number of REFUTES passages), with a bootstrap 95%
interval; accuracy, precision, recall and F1 at a threshold beside it, plus recall per
inconsistency type. Claims whose prediction has an error or no score are left out and counted.
:func:`best_f1_threshold` picks the threshold a test run reuses from its validation run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support, roc_auc_score, roc_curve

from claire.errors import ConfigError
from claire.tasks.calibration import Calibrator
from claire.tasks.measures import covers, latency_summary, robustness, usage_totals
from claire.domain import ScoreKind, flags

POSITIVE = "inconsistent"
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250
CALIBRATION_BINS = 10


def _scored(predictions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Predictions that count: no error, a score and a gold label; sorted by claim_id so that
    results never depend on the order claims finished in."""
    kept = [p for p in predictions if p.get("error") is None and p.get("score") is not None and p.get("label")]
    return sorted(kept, key=lambda p: p["claim_id"])


def _arrays(scored: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    gold = np.array([p["label"] == POSITIVE for p in scored], dtype=int)
    scores = np.array([float(p["score"]) for p in scored], dtype=float)
    return gold, scores


def rank_auroc(gold: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """AUROC of each row (the Mann-Whitney U statistic from average ranks, so ties count half,
    exactly as ``roc_auc_score``); vectorised for the bootstrap. Rows need both classes."""
    positives = gold.sum(axis=1)
    negatives = gold.shape[1] - positives
    ordered = np.sort(scores, axis=1)
    ranks = np.stack([  # 1-based, tied values sharing the mean of their ranks
        (np.searchsorted(row, values, "left") + np.searchsorted(row, values, "right") + 1) / 2
        for row, values in zip(ordered, scores)
    ])
    u = (ranks * gold).sum(axis=1) - positives * (positives + 1) / 2
    return u / (positives * negatives)


def _bootstrap_auroc(gold: np.ndarray, scores: np.ndarray) -> list[float] | None:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    index = rng.integers(0, len(gold), (BOOTSTRAP_RESAMPLES, len(gold)))
    samples = gold[index]
    both = (samples.min(axis=1) == 0) & (samples.max(axis=1) == 1)  # one-class resamples have no AUROC
    if not both.any():
        return None
    low, high = np.percentile(rank_auroc(samples[both], scores[index][both]), [2.5, 97.5])
    return [float(low), float(high)]


def compute_metrics(predictions: list[dict[str, Any]], *, threshold: float, system: str | None = None,
                    score_kind: ScoreKind = "probability") -> dict[str, Any]:
    """AUROC (with a bootstrap 95% CI), accuracy, P, R, F1 and per-type recall at ``threshold``
    (a score above it means inconsistent; a REFUTES count from it on), with counts, usage and
    latency. The same figures over the full set — a claim that ended in an error counted as a
    score of 0, read as consistent — stand beside them in ``full_set``, as the paper's tables
    cover every claim."""
    scored = _scored(predictions)
    errors = sum(1 for p in predictions if p.get("error") is not None)
    gold, scores = _arrays(scored)
    labels = [p["label"] for p in scored]
    metrics: dict[str, Any] = {
        "system": system,
        "score_kind": score_kind,
        "threshold": threshold,
        "counts": {
            "total": len(predictions),
            "scored": len(scored),
            "errors": errors,
            "unscored": len(predictions) - len(scored) - errors,
            "inconsistent": int(gold.sum()),
            "consistent": int(len(gold) - gold.sum()),
        },
        "covers": covers(len(predictions), len(scored), errors),
        "auroc": None,
        "auroc_ci95": None,
        "note": None,
        "accuracy": None,
        "precision": None,
        "recall": None,
        "f1": None,
        "confusion": None,
        "recall_by_type": {},
        "calibration": None,
        "usage": usage_totals(predictions),
        "robustness": robustness(predictions),
        "latency_s": latency_summary(predictions),
    }
    if not scored:
        metrics["note"] = "no scored predictions: every claim had an error, no score or no gold label"
        return metrics
    if len(set(labels)) == 2:
        metrics["auroc"] = float(roc_auc_score(gold, scores))
        metrics["auroc_ci95"] = _bootstrap_auroc(gold, scores)
    else:
        metrics["note"] = f"AUROC needs both labels; this run has only '{labels[0]}'"
    metrics["calibration"] = calibration(gold, scores)
    predicted = flags(scores, threshold, score_kind).astype(int)
    precision, recall, f1, _ = precision_recall_fscore_support(
        gold, predicted, average="binary", pos_label=1, zero_division=0
    )
    tn, fp, fn, tp = confusion_matrix(gold, predicted, labels=[0, 1]).ravel()
    metrics.update(
        accuracy=float(accuracy_score(gold, predicted)),
        precision=float(precision),
        recall=float(recall),
        f1=float(f1),
        confusion={"tp": int(tp), "fp": int(fp), "tn": int(tn), "fn": int(fn)},
    )
    by_type: dict[str, list[int]] = {}
    for prediction, hit in zip(scored, predicted):
        if prediction["label"] == POSITIVE:
            by_type.setdefault(prediction.get("inconsistency_type") or "unspecified", []).append(int(hit))
    metrics["recall_by_type"] = {
        name: {"n": len(hits), "detected": sum(hits), "recall": sum(hits) / len(hits)}
        for name, hits in sorted(by_type.items())
    }
    metrics["full_set"] = _full_set(predictions, threshold, score_kind) if errors else None
    return metrics


def _full_set(predictions: list[dict[str, Any]], threshold: float, score_kind: ScoreKind) -> dict[str, Any] | None:
    """AUROC, accuracy and F1 over every claim with a gold label, a claim that ended in an error
    (or without a score) counted as a score of 0."""
    labelled = sorted((p for p in predictions if p.get("label")), key=lambda p: p["claim_id"])
    gold = np.array([p["label"] == POSITIVE for p in labelled], dtype=int)
    scores = np.array([float(p["score"]) if p.get("error") is None and p.get("score") is not None else 0.0
                       for p in labelled], dtype=float)
    if len(set(gold.tolist())) < 2:
        return None
    predicted = flags(scores, threshold, score_kind).astype(int)
    _, _, f1, _ = precision_recall_fscore_support(gold, predicted, average="binary", pos_label=1, zero_division=0)
    return {"claims": len(labelled), "auroc": float(roc_auc_score(gold, scores)),
            "accuracy": float(accuracy_score(gold, predicted)), "f1": float(f1)}


def calibration(gold: np.ndarray, scores: np.ndarray, bins: int = CALIBRATION_BINS) -> dict[str, Any] | None:
    """How far scores are from being probabilities: ``bins`` equal-width bins over [0, 1], each
    with its mean score and the share of its claims that are inconsistent, and the expected
    calibration error (ECE: the count-weighted mean gap). None when the scores are not all in [0, 1]
    (the NLI pipeline's REFUTES counts; a NaN) or there are none."""
    if not len(scores) or not np.isfinite(scores).all() or scores.min() < 0 or scores.max() > 1:
        return None
    which = np.minimum((scores * bins).astype(int), bins - 1)  # a score of 1.0 goes to the top bin
    table, ece = [], 0.0
    for b in range(bins):
        inside = which == b
        count = int(inside.sum())
        if not count:
            continue
        mean_score, positive_rate = float(scores[inside].mean()), float(gold[inside].mean())
        ece += count / len(scores) * abs(positive_rate - mean_score)
        table.append({"low": b / bins, "high": (b + 1) / bins, "count": count,
                      "mean_score": mean_score, "positive_rate": positive_rate})
    return {"ece": float(ece), "bins": table}


def recalibrate(predictions: list[dict[str, Any]], validation: list[dict[str, Any]], *, source: str,
                method: str = "isotonic") -> tuple[dict[str, Any], Calibrator]:
    """Calibration of ``predictions`` after mapping their scores through a calibrator (isotonic or
    Platt) fitted on a validation run's (score, gold) pairs, as ``--threshold-from`` reuses a
    threshold; with the calibrator, which the run directory keeps."""
    fit_gold, fit_scores = _arrays(_scored(validation))
    if len(set(fit_gold.tolist())) < 2 or calibration(fit_gold, fit_scores) is None:
        raise ConfigError(f"{source} cannot calibrate: it needs scored claims of both labels with scores in [0, 1]")
    gold, scores = _arrays(_scored(predictions))
    before = calibration(gold, scores)
    if before is None:
        raise ConfigError("this run's scores are not in [0, 1] (the NLI pipeline counts REFUTES): nothing to calibrate")
    calibrator = Calibrator.fit(fit_scores, fit_gold, method=method, source=source)
    after = calibration(gold, calibrator.probabilities(scores))
    return ({"source": source, "method": method, "fitted_on": int(len(fit_scores)), "ece_before": before["ece"], **after},
            calibrator)


def roc_points(predictions: list[dict[str, Any]]) -> tuple[list[float], list[float]] | None:
    """(false-positive rates, true-positive rates) of the ROC curve, or None with one class."""
    gold, scores = _arrays(_scored(predictions))
    if len(set(gold.tolist())) < 2:
        return None
    fpr, tpr, _ = roc_curve(gold, scores)
    return fpr.tolist(), tpr.tolist()


def best_f1_threshold(predictions: list[dict[str, Any]], score_kind: ScoreKind = "probability",
                      grid: float | None = None) -> float:
    """The threshold with the highest F1; ties go to the lowest. For a REFUTES count it is one of
    the counts seen (flagging from it on); for scores, which flag above the threshold, it lies
    halfway below each distinct score (half of the lowest score for the lowest), or, with ``grid``
    (the paper's 0.1), it is the best of 0, grid, 2 x grid ... 1."""
    gold, scores = _arrays(_scored(predictions))
    if not gold.sum():
        raise ConfigError("cannot pick a best-F1 threshold: the run has no scored 'inconsistent' claims")
    distinct = np.unique(scores)
    if score_kind == "count":
        candidates = distinct
    elif grid:
        candidates = np.round(np.arange(0.0, 1.0 + grid / 2, grid), 6)
    else:
        candidates = np.round(np.concatenate([[distinct[0] / 2], (distinct[:-1] + distinct[1:]) / 2]), 6)
    predicted = flags(scores[None, :], candidates[:, None], score_kind)
    tp = (predicted & (gold == 1)).sum(axis=1)
    f1 = 2 * tp / (predicted.sum(axis=1) + gold.sum())
    return float(candidates[int(np.argmax(f1))])
