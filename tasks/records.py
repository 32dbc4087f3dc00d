"""One line of a run's ``predictions.jsonl``: the :class:`Prediction` of a system for one claim
(its Assessment, :mod:`claire.domain`, with the claim's gold answer), and the line of a claim
whose check broke.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from claire.domain import Claim, ScoreKind


class Prediction(BaseModel):
    """One line of ``predictions.jsonl``: a system's answer for one claim, with its gold label."""

    claim_id: str
    system: str
    claim_text: str = ""
    score: float | None = None
    score_kind: ScoreKind | None = None  # what the score is (None in runs written before it was recorded)
    probability: float | None = None  # the score calibrated (agent.calibration), when a calibrator was set
    verdict: str | None = None
    threshold: float | None = None
    label: str | None = None
    inconsistency_type: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
    reasoning: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)  # the system's own (nli counts, a cascade's stage, steps)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    # task "feverous": the predicted three-way label and evidence element ids, and the gold answer
    predicted_label: str | None = None
    predicted_evidence: list[str] = Field(default_factory=list)
    gold: dict[str, Any] | None = None


def prediction_from(assessment: Any, claim: Claim) -> Prediction:
    """The line of a system's Assessment (``claire.agent.system``) of ``claim``."""
    return Prediction(
        claim_id=claim.claim_id,
        system=assessment.system,
        claim_text=claim.text,
        score=assessment.score,
        score_kind=assessment.score_kind,
        probability=getattr(assessment, "probability", None),
        verdict=assessment.verdict,
        threshold=assessment.threshold,
        label=claim.label,
        inconsistency_type=claim.inconsistency_type,
        evidence_ids=[item.block_id for item in assessment.evidence],
        usage=assessment.usage,
        latency_s=assessment.latency_s,
        error=assessment.error,
        reasoning=assessment.reasoning,
        details=assessment.details,
        trace=[step.model_dump(mode="json") for step in assessment.trace],
        predicted_label=assessment.label,
        predicted_evidence=list(assessment.evidence_elements),
        gold=claim.gold,
    )




def failed_prediction(claim: Claim, system: str, error: str, usage: dict[str, Any], latency_s: float) -> Prediction:
    """The line of a claim whose assessment broke with an unexpected error."""
    return Prediction(claim_id=claim.claim_id, system=system, claim_text=claim.text, label=claim.label,
                      inconsistency_type=claim.inconsistency_type, usage=usage, latency_s=latency_s, error=error,
                      gold=claim.gold)
