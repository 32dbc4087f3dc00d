"""The citations task, in the manner of Side: does a claim's cited source support it, and which
source in a sources index would? It is answered by the ``cite`` system
(:class:`~claire.agent.citation_checker.CitationChecker`, opened like claire, rav and nli over the
sources index ``cite.index``); runs are scored with Side's measures.

``records`` reads WAFER-style files and holds what the checker answers, ``scoring`` the metrics,
report and plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claire.domain import ScoreKind
from claire.tasks.base import Task
from claire.tasks.citations.records import Citation, CitationResult, load_citations
from claire.tasks.citations.scoring import CitationPrediction, citation_metrics, write_outputs
from claire.tasks.measures import pct


class Citations(Task):
    """Citation verification on WAFER-style records."""

    name = "citations"
    line_model = CitationPrediction
    records_name = "records"
    index_setting = "cite.index"
    threshold_setting = "cite.threshold"
    system = "cite"

    def input_warnings(self, records: list[Any], max_fact_chars: int, *, source: str) -> list[str]:
        """Nothing to warn about: claims with citations may be long."""
        return []

    def load_claims(self, path: str | Path) -> list[Citation]:
        """The records of a WAFER-style file (JSONL or a JSON array)."""
        return load_citations(path)

    def line(self, record: Citation, result: CitationResult) -> CitationPrediction:
        """The predictions.jsonl line of one checked citation."""
        return CitationPrediction(
            claim_id=record.claim_id, claim_text=record.claim, cited_url=record.source.url, failed=record.failed,
            label=record.label, support=result.support, note=result.note,
            featured=record.featured, retrieved=len(result.retrieved), score=result.original.score, verdict=result.verdict, original_rank=result.original.rank,
            retrieval_rank=result.original.retrieval_rank, queries=result.queries, usage=result.usage,
            suggestions=[{"url": s.url, "title": s.title, "score": s.score, "rank": s.rank} for s in result.suggestions],
            latency_s=result.latency_s, error=result.error,
        )

    def failed_line(self, record: Citation, system: str, error: str, usage: dict[str, Any],
                    latency_s: float) -> CitationPrediction:
        """The line of a citation whose check broke with an unexpected error."""
        return CitationPrediction(claim_id=record.claim_id, claim_text=record.claim, cited_url=record.source.url,
                                  failed=record.failed, label=record.label, featured=record.featured, latency_s=latency_s,
                                  error=error)

    def default_threshold(self, config_public: dict[str, Any] | None) -> float:
        """The support threshold of the run's configuration (``cite.threshold``)."""
        value = ((config_public or {}).get("cite") or {}).get("threshold")
        return 0.5 if value is None else float(value)

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """Recall of the original source, how often it ranks first, failing-citation detection."""
        recall = ", ".join(f"@{k} {100 * v:.0f}%" for k, v in metrics["recall_at_k"].items() if v is not None)
        first = metrics["original_ranks_first"]
        lines = [f"original source retrieved: {recall or '—'}; ranked first by the verifier: "
                 f"{'—' if first is None else f'{100 * first:.0f}%'}"]
        labels = metrics.get("labels")
        if labels:
            lines.append(f"against {labels['records']} labels: exact accuracy {pct(labels['exact_accuracy'])}, binary "
                         f"accuracy {pct(labels['binary_accuracy'])}, macro F1 {pct(labels['macro_f1'])}")
        detection = metrics.get("failing_detection")
        if detection:
            lines.append(f"failing citations: average precision {100 * detection['average_precision']:.1f} "
                         f"(base rate {100 * detection['base_rate']:.0f}%), AUROC {100 * detection['auroc']:.1f}")
        return lines

    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None,
              score_kind: ScoreKind = "probability") -> dict[str, Any]:
        """Recall@k of the original source, how often it ranks first, failing-citation detection."""
        return citation_metrics(predictions, threshold=threshold)

    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """metrics.json, report.md, recall_at_k.png and (when labelled both ways) pr_failing.png."""
        write_outputs(out_dir, metrics, predictions)
