"""The System interface every system speaks — ``async assess(claim) -> Assessment`` for ``claire``
(the agent), ``rav`` (retrieve-and-verify) and ``nli`` (the NLI pipeline) alike — so evaluation,
sweeps, the web app and the CLI never special-case a system. ``agent.runtime.open_system`` makes
one from the resolved configuration.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from pydantic import BaseModel, Field

from claire.indexes.evidence import Evidence
from claire.tasks.records import COUNTING_SYSTEMS, Claim, Consistency, TraceItem, flags

SYSTEM_NAMES = ("claire", "rav", "nli", "cascade")
StepListener = Callable[[dict[str, Any]], None]
"""Called with ``{"item": trace item, "steps": n, "documents": n}`` as each step is taken."""


class Assessment(BaseModel):
    """A system's answer for one claim: score and verdict (or a FEVEROUS label), the evidence, the
    research trace, usage and latency, and the error when it could not be answered."""

    claim_id: str
    system: str
    claim_text: str
    score: float | None = None  # inconsistency score in [0, 1]; for nli the number of REFUTES
    probability: float | None = None  # the score calibrated into a probability (when agent.calibration is set)
    verdict: Consistency | None = None
    threshold: float
    evidence: list[Evidence] = Field(default_factory=list)
    clarifications: list[dict[str, str]] = Field(default_factory=list)
    explanations: list[dict[str, str]] = Field(default_factory=list)
    reported: list[str] = Field(default_factory=list)
    restated_claim: str | None = None
    reasoning: str | None = None
    report: dict[str, str] | None = None  # {"consistent": ..., "inconsistent": ...}
    details: dict[str, Any] = Field(default_factory=dict)
    trace: list[TraceItem] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
    # task "feverous": the three-way label and the cited evidence element ids
    label: str | None = None
    evidence_elements: list[str] = Field(default_factory=list)

    def decide(self) -> None:
        """Set the verdict from the score and threshold (no verdict without a score): inconsistent when
        the score is above the threshold (for nli, when the REFUTES count reaches it)."""
        if self.score is None:
            self.verdict = None
        else:
            self.verdict = "inconsistent" if flags(self.score, self.threshold, self.system) else "consistent"


class CalibratedSystem:
    """A system whose answers also carry the calibrated probability of their score (the verdict
    stays the score's); everything else is the wrapped system's."""

    def __init__(self, system: Any, calibrator: Any):
        self.system = system
        self.calibrator = calibrator
        self.name = system.name

    def __getattr__(self, name: str) -> Any:  # prompts, ...: the wrapped system's own
        found = getattr(self.system, name)  # an AttributeError when it has none (no resume for rav, ...)
        if name != "resume":
            return found

        async def resume(thread_id: str) -> Assessment:
            """A resumed interactive check's answer, with the probability."""
            return self.calibrated(await found(thread_id))

        return resume

    def calibrated(self, assessment: Assessment) -> Assessment:
        """The assessment with the probability of its score (none for a REFUTES count)."""
        if assessment.score is not None and assessment.system not in COUNTING_SYSTEMS:
            assessment.probability = round(self.calibrator.probability(assessment.score), 4)
        return assessment

    async def assess(self, claim: Claim, **kwargs: Any) -> Assessment:
        """The wrapped system's answer, with the probability."""
        return self.calibrated(await self.system.assess(claim, **kwargs))


class System(Protocol):
    """Anything that assesses claims."""

    name: str

    async def assess(self, claim: Claim) -> Assessment:
        """The system's answer for one claim (never raises for a claim it could not answer)."""
        ...
