"""A system of your own, beside CLAIRE and the baselines: ``--system number_check:NumberCheck``
(with this folder on the Python path, e.g. ``PYTHONPATH=docs/examples``).

It searches the corpus for the fact, as every system does (the same index, the fact's own article
left out), and reads the years and figures the passages give: a passage about the fact's subject
that gives other numbers where the fact gives one counts against it. No LLM is asked — a cheap
first look whose AUROC, accuracy and cost can be set beside CLAIRE's in a sweep or `claire compare`.
"""

from __future__ import annotations

import re
import time

from claire.agent.system import SystemParts
from claire.domain import Assessment, Claim, Evidence, TraceItem

NUMBER = re.compile(r"\b\d{3,4}\b")  # years and figures
WORD = re.compile(r"[a-z]{4,}")


class NumberCheck:
    """Flags a fact whose numbers the passages about its subject do not repeat."""

    name = "number_check"  # how runs, reports and predictions name it
    score_kind = "probability"  # a score in [0, 1], flagged above agent.threshold
    needs_llm = False  # no endpoint or key is asked for, and its search runs without the LLM's reranking
    reads = ("retrieval.", "baselines.k", "agent.threshold")  # the settings a run's report compares with the paper

    def __init__(self, search, *, k: int, threshold: float):
        self.search, self.k, self.threshold = search, k, threshold

    @classmethod
    def from_config(cls, parts: SystemParts) -> "NumberCheck":
        """Built from the configuration like any system: the shared search engine and settings."""
        return cls(parts.search(), k=parts.config.baselines.k, threshold=parts.config.agent.threshold)

    async def assess(self, claim: Claim) -> Assessment:
        started = time.perf_counter()
        hits = await self.search.search(claim.text, exclude_title=claim.context.document_title or None, k=self.k)
        evidence = [Evidence.from_hit(hit, n) for n, hit in enumerate(hits, start=1)]
        numbers, words = set(NUMBER.findall(claim.text)), set(WORD.findall(claim.text.lower()))
        against = [e for e in evidence
                   if len(words & set(WORD.findall(e.content.lower()))) >= 2  # about the fact's subject
                   and NUMBER.findall(e.content) and not numbers & set(NUMBER.findall(e.content))]
        score = min(1.0, 0.35 * len(against)) if numbers else 0.0
        assessment = Assessment(
            claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=score, threshold=self.threshold,
            evidence=evidence, latency_s=round(time.perf_counter() - started, 3),
            reasoning=" ".join(f"[{e.n}] gives other numbers." for e in against) or "No passage gives other numbers.",
            trace=[TraceItem(action_name="search", action_argument=claim.text,
                             action_output=[e.trace_view() for e in evidence])])
        assessment.decide()
        return assessment
