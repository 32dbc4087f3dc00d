"""A System for tests of the batch runner, sweeps and reports: it scores WikiCollide claims by a
fixed rule (no LLM, no index), records its calls and how many ran at once, and can fail or raise
for chosen claims."""

from __future__ import annotations

import asyncio

from claire.domain import Assessment, Claim, Evidence, TraceItem


def score_for(claim: Claim) -> float:
    """Scores that rank most, not all, inconsistent claims first (AUROC 24/25 on the mini fixture)."""
    number = int(claim.claim_id.split("_")[1])
    return round((number * 37 % 10) / 20 + (0.4 if claim.label == "inconsistent" else 0.1), 3)


class FakeSystem:
    """Scores claims by :func:`score_for`. Each assessment yields to the event loop ``yields``
    times (so concurrent ones overlap, deterministically) and, with ``delay``, also waits that
    many seconds (for a run that must last long enough to be killed). Claims in ``fail`` end in an
    error line; claims in ``explode`` raise."""

    def __init__(self, name: str = "claire", *, delay: float = 0.0, yields: int = 5, fail: set[str] = frozenset(),
                 explode: set[str] = frozenset()):
        self.name = name
        self.delay = delay
        self.yields = yields
        self.fail = fail
        self.explode = explode
        self.calls: list[str] = []
        self.active = 0
        self.peak = 0

    async def assess(self, claim: Claim) -> Assessment:
        """The claim's fixed score, with one search step, usage and evidence."""
        self.calls.append(claim.claim_id)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            for _ in range(self.yields):
                await asyncio.sleep(0)
            if self.delay:
                await asyncio.sleep(self.delay)
            if claim.claim_id in self.explode:
                raise RuntimeError("the fake system exploded")
            assessment = Assessment(
                claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=score_for(claim), threshold=0.5,
                evidence=[Evidence(n=1, block_id=f"blk-{claim.claim_id}", document_title="Doc", content="text")],
                trace=[TraceItem(action_name="search", action_argument=claim.text[:20], action_output=["blk"])],
                usage={"calls": 2, "cached_calls": 0, "prompt_tokens": 90, "completion_tokens": 10,
                       "total_tokens": 100, "cost_usd": 0.001},
            )
            if claim.claim_id in self.fail:
                assessment.score, assessment.error = None, "LLMError: the endpoint kept failing"
            assessment.decide()
            return assessment
        finally:
            self.active -= 1
