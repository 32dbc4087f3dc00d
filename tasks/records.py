"""What a task is made of: the :class:`Claim` a system checks (the fact, the passage it came from,
and its gold answer when known), the :class:`TraceItem`, one step of research in the shape of
WikiCollide's ``agent_trace`` (so CLAIRE's traces and the dataset's can be compared and replayed),
and the :class:`Prediction`, one line of a run's ``predictions.jsonl``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from claire.indexes.corpus import Passage

Consistency = Literal["consistent", "inconsistent"]

COUNTING_SYSTEMS = frozenset({"nli"})
"""Systems whose score is a count (the NLI pipeline's REFUTES passages), not a score in [0, 1]."""


def flags(score: float, threshold: float, system: str | None = None) -> bool:
    """Whether a score (or each of an array of scores) makes a claim inconsistent. As in the paper, a score flags a claim when it is
    *above* the threshold (0.5 is not flagged at 0.5); a REFUTES count flags it from the threshold
    on (one REFUTES passage at threshold 1)."""
    return score >= threshold if system in COUNTING_SYSTEMS else score > threshold


class Claim(BaseModel):
    """One fact to check, with the passage it comes from (its own article is excluded from search)."""

    claim_id: str = "claim"
    text: str
    context: Passage = Field(default_factory=Passage)
    label: Consistency | None = None  # gold label, when known (evaluation)
    inconsistency_type: str | None = None
    gold: dict[str, Any] | None = None  # a task's gold answer, e.g. FEVEROUS {label, evidence}


class TraceItem(BaseModel):
    """One step of a system's work: the action, its argument and what it produced."""

    action_name: str
    action_argument: Any = None
    action_output: Any = None


class Prediction(BaseModel):
    """One line of ``predictions.jsonl``: a system's answer for one claim, with its gold label."""

    claim_id: str
    system: str
    claim_text: str = ""
    score: float | None = None
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
