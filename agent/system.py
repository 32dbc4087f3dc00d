"""The shared System interface and the data it speaks: Claim in, Assessment out.

``claire`` (the agent), ``rav`` (retrieve-and-verify) and ``nli`` (the NLI pipeline) all
implement ``async assess(claim) -> Assessment``, so evaluation, sweeps and the CLI never
special-case a system. ``agent.runtime.open_system`` makes one from the resolved configuration.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

SYSTEM_NAMES = ("claire", "rav", "nli")
Verdict = Literal["consistent", "inconsistent"]


class ContextBlock(BaseModel):
    """The passage a claim was taken from (its own article is excluded from search)."""

    document_title: str = ""
    section_title: str = ""
    content: str = ""
    url: str | None = None
    last_edit_date: str | None = None


class Claim(BaseModel):
    claim_id: str = "claim"
    text: str
    context: ContextBlock = Field(default_factory=ContextBlock)
    label: Verdict | None = None  # gold label, when known (evaluation)
    inconsistency_type: str | None = None
    gold: dict[str, Any] | None = None  # a task's gold answer, e.g. FEVEROUS {label, evidence}


class Evidence(BaseModel):
    """A retrieved block, numbered [n] in the order the system first saw it."""

    n: int
    block_id: str
    document_title: str
    section_title: str = ""
    content: str
    url: str | None = None
    score: float | None = None
    elements: list[dict[str, str]] | None = None  # element ids and texts of the block, when it has them


class TraceItem(BaseModel):
    """One step, in WikiCollide's ``agent_trace`` shape."""

    action_name: str
    action_argument: Any = None
    action_output: Any = None


class Assessment(BaseModel):
    claim_id: str
    system: str
    claim_text: str
    score: float | None = None  # inconsistency score in [0, 1]; for nli the number of REFUTES
    verdict: Verdict | None = None
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
        """Set the verdict from the score and threshold (no verdict without a score)."""
        self.verdict = None if self.score is None else ("inconsistent" if self.score >= self.threshold else "consistent")


class System(Protocol):
    name: str

    async def assess(self, claim: Claim) -> Assessment: ...
