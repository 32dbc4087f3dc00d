"""Scoring a citations run with Side's measures: how often the original source is retrieved in
the top k (recall@k), how often the verifier ranks it first, and — when records mark citations
that failed verification — how well the support score detects them (average precision, AUROC,
precision/recall at the threshold); written as metrics.json, report.md and plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from pydantic import BaseModel, Field
from sklearn.metrics import (accuracy_score, average_precision_score, confusion_matrix, precision_recall_curve,
                             precision_recall_fscore_support, roc_auc_score)

from claire.files import strict_json, write_atomically
from claire.tasks.citations.records import SupportLabel
from claire.tasks.measures import METRICS, REPORT, pct

TASK = "citations"
RECALL_KS = (1, 3, 5, 10, 20, 50, 100, 200)
"""The k of Side's SR@k (the original among the top k retrieved sources); above the number of
sources a run retrieved (cite.search_k passages, grouped by source) the figure is left out."""


class CitationPrediction(BaseModel):
    """One line of a citations run's ``predictions.jsonl``."""

    claim_id: str
    system: str = "cite"
    claim_text: str = ""
    cited_url: str | None = None
    failed: bool | None = None  # gold: the citation failed verification
    label: SupportLabel | None = None  # gold: one of the four labels, when the data gives it
    support: SupportLabel | None = None  # the checker's answer: how the cited source stands to the claim
    note: str | None = None  # why the source was taken as unavailable
    featured: bool | None = None  # the record comes from a featured article
    retrieved: int | None = None  # sources the search returned
    score: float | None = None  # the original source's support score
    verdict: str | None = None
    original_rank: int | None = None  # among original + candidates after verification
    retrieval_rank: int | None = None  # the original's document rank in the search results
    suggestions: list[dict[str, Any]] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None


# -- metrics, report, plots ---------------------------------------------------------------------
def success_at_k(predictions: list[dict[str, Any]]) -> dict[str, float | None]:
    """SR@k: the share of records whose original source is among the top k retrieved, for each k
    of RECALL_KS that the run's searches reached (a k beyond every record's retrieved sources is
    left out rather than reported as a plateau)."""
    n = len(predictions)
    deepest = max((p.get("retrieved") or 0 for p in predictions), default=0)
    ranks = [p.get("retrieval_rank") for p in predictions]
    return {str(k): (sum(1 for r in ranks if r is not None and r <= k) / n if n else None)
            for k in RECALL_KS if k <= max(deepest, 20)}


def label_metrics(predictions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checker's answers against the gold labels, as citation-verification papers report them:
    exact accuracy over the four labels, binary accuracy (supported or not), F1 per label, and the
    confusion matrix (gold label, then answer). A record that ended in an error counts as a wrong
    answer; None when no record has a gold label."""
    labelled = [p for p in predictions if p.get("label")]
    if not labelled:
        return None
    gold = [str(p["label"]) for p in labelled]
    given = [str(p.get("support") or "error") for p in labelled]
    labels = [str(label) for label in SupportLabel]
    precision, recall, f1, counts = precision_recall_fscore_support(gold, given, labels=labels, zero_division=0)
    per_class = {label: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(n)}
                 for label, p, r, f, n in zip(labels, precision, recall, f1, counts)}
    present = [label for label in labels if per_class[label]["support"]]
    answers = [*labels, "error"]
    matrix = confusion_matrix(gold, given, labels=answers)
    supported = str(SupportLabel.SUPPORTED)
    return {
        "records": len(labelled),
        "errors": given.count("error"),
        "exact_accuracy": float(accuracy_score(gold, given)),
        "binary_accuracy": float(accuracy_score([g == supported for g in gold], [a == supported for a in given])),
        "macro_f1": sum(per_class[label]["f1"] for label in present) / len(present),
        "per_class": per_class,
        "confusion": {label: {answer: int(matrix[i][j]) for j, answer in enumerate(answers)}
                      for i, label in enumerate(labels)},
    }


def citation_metrics(predictions: list[dict[str, Any]], *, threshold: float) -> dict[str, Any]:
    """Side's measures over a run's predictions (records with errors are counted, not scored), and
    the answers against the gold labels when the data has them (:func:`label_metrics`)."""
    scored = [p for p in predictions if p.get("error") is None and p.get("score") is not None]
    n = len(scored)
    metrics: dict[str, Any] = {"task": TASK, "records": len(predictions), "scored": n,
                               "errors": len(predictions) - n, "threshold": threshold}
    metrics["recall_at_k"] = success_at_k(scored)
    featured = [p for p in scored if p.get("featured")]
    if featured and len(featured) < n:  # the data marks featured articles: their figure apart
        metrics["recall_at_k_featured"] = success_at_k(featured)
        metrics["featured"] = len(featured)
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
    metrics["labels"] = label_metrics(predictions)
    return metrics




def write_report(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """report.md: the measures, the verdicts and one row per record."""
    lines = [
        "# Citation verification", "",
        f"{metrics['scored']} of {metrics['records']} records scored ({metrics['errors']} errors); "
        f"support threshold {metrics['threshold']}.", "",
        "| measure | value (%) |", "|---|---|",
        *[f"| original source retrieved in top {k} (SR@{k}) | {pct(v)} |" for k, v in metrics["recall_at_k"].items()],
        *[f"| featured articles only ({metrics['featured']} records): SR@{k} | {pct(v)} |"
          for k, v in (metrics.get("recall_at_k_featured") or {}).items()],
        f"| verifier ranks the original first | {pct(metrics['original_ranks_first'])} |",
    ]
    detection = metrics.get("failing_detection")
    if detection:
        lines += [
            f"| failing citations: average precision (base rate {pct(detection['base_rate'])}) | {pct(detection['average_precision'])} |",
            f"| failing citations: AUROC | {pct(detection['auroc'])} |",
            f"| failing citations at the threshold: precision / recall / F1 | {pct(detection['precision'])} / "
            f"{pct(detection['recall'])} / {pct(detection['f1'])} |",
        ]
    else:
        lines += ["", "No precision-recall curve: the file does not mark both passing and failing citations."]
    labels = metrics.get("labels")
    if labels:
        answers = [*SupportLabel, "error"]
        lines += ["", f"## Against the gold labels ({labels['records']} records)", "",
                  f"Exact accuracy {pct(labels['exact_accuracy'])}, binary accuracy (supported or not) "
                  f"{pct(labels['binary_accuracy'])}, macro F1 {pct(labels['macro_f1'])}.", "",
                  "| label | precision | recall | F1 | records |", "|---|---|---|---|---|",
                  *[f"| {label} | {pct(row['precision'])} | {pct(row['recall'])} | {pct(row['f1'])} | {row['support']} |"
                    for label, row in labels["per_class"].items()], "",
                  "Confusion matrix (rows: the gold label; columns: the answer):", "",
                  "| gold \\ answer | " + " | ".join(map(str, answers)) + " |", "|---" * (len(answers) + 1) + "|",
                  *[f"| {gold} | " + " | ".join(str(row[str(a)]) for a in answers) + " |"
                    for gold, row in labels["confusion"].items()]]
    lines += ["", "Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(metrics["verdicts"].items())), "",
              "| id | failed (gold) | label (gold) | support score | answer | verdict | retrieval rank | best suggestion |",
              "|---|---|---|---|---|---|---|---|"]
    for p in predictions:
        best = p["suggestions"][0] if p.get("suggestions") else None
        suggestion = f"{best['url'] or best['title']} ({best['score']:.2f})" if best else "—"
        score = "error" if p.get("score") is None else f"{p['score']:.2f}"
        if p.get("support") == SupportLabel.UNAVAILABLE:
            score = "not read"
        lines.append(f"| {p['claim_id']} | {p.get('failed')} | {p.get('label') or '—'} | {score} | {p.get('support') or '—'} | "
                     f"{p.get('verdict') or '—'} | "
                     f"{p.get('retrieval_rank') or '—'} | {suggestion} |")
    write_atomically(out_dir / REPORT, "\n".join(lines) + "\n")


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


def write_outputs(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """metrics.json (listing the plots), report.md and the plots of a citations run."""
    out_dir = Path(out_dir)
    metrics["plots"] = write_plots(out_dir, metrics, predictions)
    write_atomically(out_dir / METRICS, strict_json(metrics, indent=2) + "\n")
    write_report(out_dir, metrics, predictions)
