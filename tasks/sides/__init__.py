"""The sides task: which side of a contradiction is right. It is answered by the ``resolve``
system (:class:`~claire.resolving.resolver.Resolver`); a run reports accuracy where a winner exists,
wrong winners named with high confidence, and how well *cannot tell* finds the cases without
evidence.

``records`` reads case files and holds what the resolver answers, ``scoring`` the measures and
report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claire.domain import ScoreKind
from claire.tasks.base import Task
from claire.tasks.sides.records import Resolution, SidesCase, load_cases
from claire.tasks.sides.scoring import SidesPrediction, headline, sides_metrics, write_outputs


class Sides(Task):
    """Which side of a contradiction is right, on case files (JSONL)."""

    name = "sides"
    line_model = SidesPrediction
    records_name = "cases"
    system = "resolve"
    corpus_records = False  # a case carries its passages and pages; the index is searched only when it has none

    def input_warnings(self, records: list[Any], max_fact_chars: int, *, source: str) -> list[str]:
        """Nothing to warn about."""
        return []

    def load_claims(self, path: str | Path) -> list[SidesCase]:
        """The cases of a sides file (JSONL)."""
        return load_cases(path)

    def line(self, record: SidesCase, result: Resolution) -> SidesPrediction:
        """The predictions.jsonl line of one resolved case."""
        return SidesPrediction(
            claim_id=record.claim_id, claim_text=record.fact.text, label=record.label, decision=result.decision,
            confidence=result.confidence, reasons=result.reasons, missing=result.missing, explanation=result.explanation,
            time_varying=result.time_varying, sides=[s.model_dump(mode="json") for s in result.sides],
            talk_page=result.talk_page, usage=result.usage,
            expected_support={s.url: s.expect for s in record.sources if s.expect is not None}, latency_s=result.latency_s, error=result.error)

    def failed_line(self, record: SidesCase, system: str, error: str, usage: dict[str, Any],
                    latency_s: float) -> SidesPrediction:
        """The line of a case whose resolve broke."""
        return SidesPrediction(claim_id=record.claim_id, claim_text=record.fact.text, label=record.label, usage=usage,
                               latency_s=latency_s, error=error)

    def default_threshold(self, config_public: dict[str, Any] | None) -> float:
        """No threshold: the decision is the answer (0.5 is recorded)."""
        return 0.5

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """Accuracy where a winner exists, confident wrong winners, cannot tell."""
        return headline(metrics)

    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None,
              score_kind: ScoreKind = "probability") -> dict[str, Any]:
        """The measures of :func:`~claire.tasks.sides.scoring.sides_metrics`."""
        return sides_metrics(predictions)

    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """metrics.json and report.md."""
        write_outputs(out_dir, metrics, predictions)
