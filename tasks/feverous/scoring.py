"""Scoring a FEVEROUS run: label accuracy, the FEVEROUS score, evidence precision/recall/F1 and
the per-label confusion, written as metrics.json and report.md of the run directory.

Definitions follow FEVEROUS's official scorer. Predicted evidence is first cut to FEVEROUS's
limits (5 sentences, 25 table elements: cells, header cells, captions and list items).
- **FEVEROUS score**: the share of claims whose label is right AND whose predicted evidence
  contains at least one complete gold evidence set (for every label, NOT ENOUGH INFO included;
  a claim without gold evidence sets cannot score).
- **Evidence precision** (macro): per claim, the predicted ids found in any gold set over the
  predicted ids (1 when nothing was predicted); averaged over claims.
- **Evidence recall** (macro): per claim, 1 when some gold set is complete in the prediction, else
  0 (1 for a claim without gold evidence); averaged. **F1** is their harmonic mean.
- **Element recall** (an extra): per claim, the share of all gold ids that were predicted.
Predictions with an error are left out of every figure and counted, as in WikiCollide runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from claire.files import strict_json, write_atomically
from claire.tasks.feverous.judge import LABELS, limit_evidence
from claire.tasks.measures import METRICS, PREDICTIONS, REPORT, ROC, cost_summary, covers, latency_summary, pct, token_summary, usage_totals

PAPER = 'Aly et al., "FEVEROUS: Fact Extraction and VERification Over Unstructured and Structured information", NeurIPS 2021 Datasets and Benchmarks'
# The only figure quoted here: the abstract states that the baseline "predicts both the correct
# evidence and verdict for 18% of the claims" (the FEVEROUS score on the test set).
PAPER_BASELINE_SCORE = 18.0


def _claim_scores(label: str | None, predicted: list[str], gold_label: str, gold_sets: list[list[str]]) -> dict[str, Any]:
    """The per-claim pieces of every figure."""
    predicted = limit_evidence(predicted)
    chosen = set(predicted)
    complete = any(set(group) <= chosen for group in gold_sets)  # false without gold sets; true for an empty one
    all_gold = {element for group in gold_sets for element in group}
    return {
        "label_correct": label == gold_label,
        "strict": label == gold_label and complete,
        "precision": sum(1 for e in predicted if e in all_gold) / len(predicted) if predicted else 1.0,
        "recall": 1.0 if complete or not gold_sets else 0.0,
        "element_recall": len(all_gold & chosen) / len(all_gold) if all_gold else 1.0,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def feverous_metrics(predictions: list[dict[str, Any]], *, system: str | None = None) -> dict[str, Any]:
    """The figures of a FEVEROUS run from its predictions (each with ``gold`` {label, evidence})."""
    total = len(predictions)
    errors = sum(1 for p in predictions if p.get("error"))
    scored = sorted(
        (p for p in predictions if not p.get("error") and p.get("predicted_label") and (p.get("gold") or {}).get("label")),
        key=lambda p: p["claim_id"],
    )
    rows = []
    confusion = {gold: {pred: 0 for pred in LABELS} for gold in LABELS}
    by_challenge: dict[str, list[dict[str, Any]]] = {}
    for p in scored:
        gold = p["gold"]
        row = _claim_scores(p["predicted_label"], p.get("predicted_evidence") or [], gold["label"], gold.get("evidence") or [])
        rows.append(row)
        if gold["label"] in confusion and p["predicted_label"] in confusion[gold["label"]]:
            confusion[gold["label"]][p["predicted_label"]] += 1
        by_challenge.setdefault(gold.get("challenge") or "(none)", []).append(row)
    precision = _mean([r["precision"] for r in rows])
    recall = _mean([r["recall"] for r in rows])
    f1 = None if precision is None or recall is None else (2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    per_label = {}
    for label in LABELS:
        hits = confusion[label][label]
        predicted = sum(confusion[g][label] for g in LABELS)
        actual = sum(confusion[label].values())
        p_, r_ = (hits / predicted if predicted else None), (hits / actual if actual else None)
        per_label[label] = {"n": actual, "predicted": predicted, "precision": p_, "recall": r_,
                            "f1": None if p_ is None or r_ is None else (2 * p_ * r_ / (p_ + r_) if p_ + r_ else 0.0)}
    return {
        "task": "feverous",
        "system": system or (predictions[0]["system"] if predictions else None),
        "counts": {"total": total, "scored": len(scored), "errors": errors, "unscored": total - len(scored) - errors,
                   "gold_labels": dict(Counter(p["gold"]["label"] for p in scored))},
        "covers": covers(total, len(scored), errors),
        "accuracy": _mean([1.0 if r["label_correct"] else 0.0 for r in rows]),
        "feverous_score": _mean([1.0 if r["strict"] else 0.0 for r in rows]),
        "evidence_precision": precision,
        "evidence_recall": recall,
        "evidence_f1": f1,
        "element_recall": _mean([r["element_recall"] for r in rows]),
        "confusion": confusion,
        "per_label": per_label,
        "by_challenge": {
            name: {"n": len(items), "accuracy": _mean([1.0 if r["label_correct"] else 0.0 for r in items]),
                   "feverous_score": _mean([1.0 if r["strict"] else 0.0 for r in items])}
            for name, items in sorted(by_challenge.items())
        },
        "limits": {"sentences": 5, "table_elements": 25},
        "usage": usage_totals(predictions),
        "latency_s": latency_summary(predictions),
    }


def render_feverous_report(metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> str:
    """The Markdown report of a FEVEROUS run."""
    c = metrics["confusion"]
    lines = [
        f"# FEVEROUS evaluation of `{metrics.get('system') or '?'}`" + (f" on the {metrics['split']} split" if metrics.get("split") else ""),
        "",
        f"Covers {metrics['covers']}. Figures ×100. Predicted evidence is cut to FEVEROUS's limits "
        "(5 sentences, 25 table cells/captions/list items) before scoring.",
        "",
        "| System | Label accuracy | FEVEROUS score | Evidence P | Evidence R | Evidence F1 | Element recall |",
        "|---|---|---|---|---|---|---|",
        f"| **{metrics.get('system') or '?'}** (this run) | {pct(metrics['accuracy'])} | {pct(metrics['feverous_score'])} "
        f"| {pct(metrics['evidence_precision'])} | {pct(metrics['evidence_recall'])} | {pct(metrics['evidence_f1'])} "
        f"| {pct(metrics['element_recall'])} |",
        f"| FEVEROUS baseline — *reference, test set* | — | {PAPER_BASELINE_SCORE:.0f} | — | — | — | — |",
        "",
        f"Reference, not produced by this run: {PAPER}, whose abstract says its baseline predicts both the "
        "correct evidence and verdict for 18% of the claims (the FEVEROUS score). No other figure of that "
        "paper is quoted here. A run on a sample, with another retriever or corpus, is not directly comparable.",
        "",
        "The FEVEROUS score counts a claim only when its label is right and at least one complete gold "
        "evidence set is inside the predicted evidence. Evidence precision and recall are macro averages "
        "as in FEVEROUS's scorer (recall: a complete gold set found); element recall is the share of gold "
        "ids predicted.",
        "",
        "## Confusion (gold rows × predicted columns)",
        "",
        "| gold \\ predicted | " + " | ".join(LABELS) + " |",
        "|---|" + "---|" * len(LABELS),
    ]
    lines += [f"| {gold} | " + " | ".join(str(c[gold][pred]) for pred in LABELS) + " |" for gold in LABELS]
    lines += ["", "| Label | n (gold) | predicted | P | R | F1 |", "|---|---|---|---|---|---|"]
    lines += [f"| {label} | {row['n']} | {row['predicted']} | {pct(row['precision'])} | {pct(row['recall'])} | {pct(row['f1'])} |"
              for label, row in metrics["per_label"].items()]
    if metrics.get("by_challenge"):
        lines += ["", "## By challenge", "", "| Challenge | n | Label accuracy | FEVEROUS score |", "|---|---|---|---|"]
        lines += [f"| {name} | {row['n']} | {pct(row['accuracy'])} | {pct(row['feverous_score'])} |"
                  for name, row in metrics["by_challenge"].items()]
    failed = [p for p in predictions if p.get("error")]
    lines += ["", "## Errors", "", f"{len(failed)} claim(s) ended in an error." if failed else "None.", ""]
    lines += [f"- `{p['claim_id']}`: {str(p['error']).splitlines()[0][:300]}" for p in failed[:50]]
    if len(failed) > 50:
        lines.append(f"- … and {len(failed) - 50} more (see {PREDICTIONS})")
    usage = metrics["usage"]
    lines += ["", "## Usage", "",
              f"- LLM calls: {usage['calls']:,} (+{usage['cached_calls']:,} from cache)",
              f"- Tokens: {token_summary(usage)}",
              f"- Cost: {cost_summary(usage)}",
              ""]
    return "\n".join(lines)


def write_outputs(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """Write metrics.json and report.md of a FEVEROUS run directory (no ROC plot)."""
    out_dir = Path(out_dir)
    write_atomically(out_dir / METRICS, strict_json(metrics, indent=2) + "\n")
    write_atomically(out_dir / REPORT, render_feverous_report(metrics, predictions))
    (out_dir / ROC).unlink(missing_ok=True)
