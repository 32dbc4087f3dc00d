"""Scoring a sides run: how often the resolver names the right side, how often it names a wrong
one confidently, how well *cannot tell* finds the cases with no evidence, and how its support
judgements compare with what the sources hold; written as metrics.json and report.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from claire.files import strict_json, write_atomically
from claire.tasks.measures import METRICS, REPORT, pct

TASK = "sides"
HIGH_CONFIDENCE = 0.8
"""From this confidence on, a named winner counts as a confident one (the "named wrongly with high confidence" measure)."""


class SidesPrediction(BaseModel):
    """One line of a sides run's ``predictions.jsonl``."""

    claim_id: str
    system: str = "resolve"
    claim_text: str = ""
    label: str | None = None  # gold: fact, passage, both or unknown
    decision: str | None = None
    confidence: float | None = None
    reasons: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    explanation: str | None = None
    time_varying: bool | None = None
    sides: list[dict[str, Any]] = Field(default_factory=list)
    talk_page: str | None = None
    expected_support: dict[str, str] = Field(default_factory=dict)  # source URL -> what the case's author found it says
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def sides_metrics(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """The measures (see the module docstring); the support judgements are compared with what the
    case's author wrote down for each source (``expect``), where the case says."""
    done = [p for p in predictions if p.get("error") is None and p.get("decision") is not None]
    labelled = [p for p in done if p.get("label")]
    winners = [p for p in labelled if p["label"] in ("fact", "passage")]
    named = [p for p in labelled if p["decision"] in ("fact", "passage")]
    wrong_confident = [p for p in named if p["decision"] != p["label"] and (p.get("confidence") or 0) >= HIGH_CONFIDENCE]
    said_unknown = [p for p in labelled if p["decision"] == "unknown"]
    truly_unknown = [p for p in labelled if p["label"] == "unknown"]
    hit_unknown = [p for p in said_unknown if p["label"] == "unknown"]
    by_label: dict[str, dict[str, int]] = {}
    for p in labelled:
        row = by_label.setdefault(p["label"], {})
        row[p["decision"]] = row.get(p["decision"], 0) + 1
    support: dict[str, int] = {}
    for p in done:
        for side in p.get("sides") or []:
            for source in side.get("sources") or []:
                support[source.get("support") or "unknown"] = support.get(source.get("support") or "unknown", 0) + 1
    metrics: dict[str, Any] = {
        "task": TASK, "records": len(predictions), "resolved": len(done), "errors": len(predictions) - len(done),
        "labelled": len(labelled),
        "accuracy_with_winner": _ratio(sum(1 for p in winners if p["decision"] == p["label"]), len(winners)),
        "cases_with_winner": len(winners),
        "accuracy": _ratio(sum(1 for p in labelled if p["decision"] == p["label"]), len(labelled)),
        "wrong_high_confidence": _ratio(len(wrong_confident), len(named)),
        "wrong_high_confidence_count": len(wrong_confident),
        "cannot_tell_precision": _ratio(len(hit_unknown), len(said_unknown)),
        "cannot_tell_recall": _ratio(len(hit_unknown), len(truly_unknown)),
        "confusion": by_label,
        "support_judgements": support,
    }
    agree = total = 0
    for p in done:
        wanted = p.get("expected_support") or {}
        if wanted:
            for side in p.get("sides") or []:
                for source in side.get("sources") or []:
                    url = (source.get("reference") or {}).get("url")
                    if url in wanted:
                        total += 1
                        agree += source.get("support") == wanted[url]
    metrics["support_agreement"] = _ratio(agree, total)
    metrics["support_judged"] = total
    calls = [int((p.get("usage") or {}).get("calls") or 0) for p in done]
    seconds = [p.get("latency_s") or 0.0 for p in done]
    metrics["llm_calls_per_case"] = _ratio(sum(calls), len(calls))
    metrics["seconds_per_case"] = _ratio(int(1000 * sum(seconds)), 1000 * len(seconds)) if seconds else None
    return metrics


def headline(metrics: dict[str, Any]) -> list[str]:
    """The run's measures in two lines."""
    return [
        f"right side named: {pct(metrics['accuracy_with_winner'])}% of {metrics['cases_with_winner']} cases with a "
        f"winner; named wrongly with high confidence: {pct(metrics['wrong_high_confidence'])}%",
        f"cannot tell: precision {pct(metrics['cannot_tell_precision'])}%, recall {pct(metrics['cannot_tell_recall'])}%;"
        f" support judgements as the cases expect: {pct(metrics.get('support_agreement'))}% of "
        f"{metrics.get('support_judged', 0)}; {metrics['resolved']} of {metrics['records']} resolved "
        f"({metrics['errors']} errors)",
    ]


def write_outputs(out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """metrics.json and report.md (the measures, the confusion table and one row per case)."""
    write_atomically(out_dir / METRICS, strict_json(metrics, indent=2) + "\n")
    labels = ("fact", "passage", "both", "unknown")
    lines = ["# Which side is right", "", *headline(metrics), "",
             "| gold \\ decided | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for gold in labels:
        row = metrics["confusion"].get(gold) or {}
        lines.append(f"| {gold} | " + " | ".join(str(row.get(d, 0)) for d in labels) + " |")
    lines += ["", "Support judgements: " + ", ".join(f"{k} {v}" for k, v in sorted(metrics["support_judgements"].items())),
              "", "| id | gold | decided | confidence | reasons |", "|---|---|---|---|---|"]
    for p in predictions:
        confidence = "—" if p.get("confidence") is None else f"{p['confidence']:.2f}"
        reasons = "; ".join(p.get("reasons") or []) or (p.get("error") or "—")
        lines.append(f"| {p['claim_id']} | {p.get('label') or '—'} | {p.get('decision') or 'error'} | {confidence} | "
                     f"{reasons.replace('|', '/')} |")
    write_atomically(out_dir / REPORT, "\n".join(lines) + "\n")
