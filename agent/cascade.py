"""The cascade (beyond the paper): a cheap first pass, and the full CLAIRE agent only where it
may matter.

Every fact is first checked by a baseline (``agent.cascade_first``: retrieve-and-verify, one LLM
call, or the NLI pipeline). A fact whose first-pass score is below a low cut
(``agent.cascade_cut``; for the NLI pipeline the share of passages judged REFUTES) keeps that
score: the cheap pass found nothing worth a closer look. Every other fact — and any whose first
pass failed — goes to CLAIRE, whose score is the answer. The cut is meant to be low, chosen on a
validation run so that nearly every inconsistent fact passes it (:func:`cut_for_recall`,
``claire eval --system cascade --cut-from VALIDATION_RUN``); then the cascade keeps CLAIRE's recall
and spends CLAIRE's calls only on the facts that need them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from claire.agent.registry import score_kind
from claire.agent.system import System, SystemParts
from claire.domain import Assessment, Claim, ScoreKind
from claire.errors import ConfigError
from claire.usage import Usage


def first_pass_score(assessment: Assessment) -> float | None:
    """A first pass's score in [0, 1]: the NLI pipeline's share of REFUTES passages, else the score."""
    return _score_in_unit_range(assessment.score_kind, assessment.score, assessment.details)


def _score_in_unit_range(kind: ScoreKind, score: float | None, details: dict[str, Any] | None) -> float | None:
    """A score in [0, 1]: a count's share of the passages it counted over (the NLI pipeline's
    REFUTES share), else the score itself; None when there is none."""
    if score is None:
        return None
    if kind == "count":
        share = (details or {}).get("refutes_fraction")
        return None if share is None else float(share)
    return float(score)


@dataclass(eq=False)
class Cascade:
    """A baseline first, then CLAIRE for the facts whose first-pass score reaches ``cut``."""

    name = "cascade"
    score_kind: ClassVar[ScoreKind] = "probability"  # a first pass's count is answered as its share of passages
    cut_setting = "agent.cascade_cut"  # the setting `claire eval --cut-from` chooses for it
    reads: ClassVar[tuple[str, ...]] = ("llm.", "retrieval.", "agent.", "baselines.", "prompts.")

    first: System
    full: System
    cut: float = field(kw_only=True)
    threshold: float = field(kw_only=True)

    @classmethod
    def from_config(cls, parts: SystemParts) -> "Cascade":
        """``agent.cascade_first`` first, then claire (the one a person reviews) past ``agent.cascade_cut``."""
        agent = parts.config.agent
        return cls(parts.build(agent.cascade_first), parts.build("claire", reviewer=parts.reviewer),
                   cut=agent.cascade_cut, threshold=agent.threshold)

    @property
    def prompts(self) -> Any:
        """The prompt library of the systems (a run directory records its fingerprint)."""
        return getattr(self.full, "prompts", None)

    async def assess(self, claim: Claim) -> Assessment:
        """The first pass's answer for a fact below the cut, else CLAIRE's (with both costs)."""
        started = time.perf_counter()
        first = await self.first.assess(claim)
        score = first_pass_score(first) if first.error is None else None
        stage = {"first_system": first.system, "first_score": score, "cut": self.cut,
                 "first_error": first.error}
        if score is not None and score < self.cut:
            answer = first.model_copy(update={"system": self.name, "score": score, "score_kind": self.score_kind,
                                              "threshold": self.threshold,
                                              "details": {**first.details, **stage, "stage": "first pass"}})
        else:
            full = await self.full.assess(claim)
            usage = Usage.from_dict(first.usage)
            usage.add(Usage.from_dict(full.usage))
            answer = full.model_copy(update={
                "system": self.name, "trace": first.trace + full.trace, "usage": usage.to_dict(),
                "details": {**full.details, **stage, "stage": "claire"},
            })
        answer.latency_s = round(time.perf_counter() - started, 3)
        answer.decide()
        return answer


def cut_for_recall(predictions: list[dict[str, Any]], recall: float) -> float:
    """The highest cut that still sends at least ``recall`` of a validation run's inconsistent facts
    past the first pass (facts scoring below the cut stay with it). ``predictions`` are a cascade
    run's lines (with their first-pass score) or a first-pass system's own (rav scores, nli REFUTES
    shares)."""
    if not 0 < recall <= 1:
        raise ConfigError(f"the recall to keep must be in (0, 1], got {recall}")
    scores = sorted(_first_scores(predictions))
    if not scores:
        raise ConfigError("the validation run has no scored inconsistent facts to choose a cascade cut from")
    missed = int((1 - recall) * len(scores) + 1e-9)  # inconsistent facts the cut may leave with the first pass
    return float(scores[missed])


def _first_scores(predictions: list[dict[str, Any]]) -> list[float]:
    """The first-pass scores in [0, 1] of a validation run's inconsistent facts."""
    found = []
    for line in predictions:
        if line.get("label") != "inconsistent" or line.get("error") is not None or line.get("score") is None:
            continue
        if "first_score" in (line.get("details") or {}):  # a cascade's line: the first pass's own score
            value = (line.get("details") or {}).get("first_score")
        else:
            kind = line.get("score_kind") or score_kind(line.get("system"))
            value = _score_in_unit_range(kind, line.get("score"), line.get("details"))
        if value is not None:
            found.append(float(value))
    return found
