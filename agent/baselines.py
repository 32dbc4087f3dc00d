"""The paper's two baselines on CLAIRE's parts: retrieve-and-verify (``rav``) and the NLI pipeline
(``nli``). Both search once for the claim (``baselines.k`` passages, the claim's article
excluded, reranked when enabled); ``rav`` then runs the task's verifier, ``nli`` one NLI call per
passage, counting REFUTES.
"""

from __future__ import annotations

import asyncio
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from claire.agent.system import StepListener, SystemParts, report_step, step_listeners
from claire.domain import Assessment, Claim, Evidence, known_elements, ScoreKind, TraceItem
from claire.agent.verifier import verdict_items
from claire.errors import ClaireError
from claire.llm.answers import NLI_LABELS, cited_elements, nli_label
from claire.llm.client import ChatClient
from claire.usage import track_usage
from claire.prompts import PromptLibrary
from claire.prompts.answers import Answer
from claire.tasks.base import NLIJudgement, Task
from claire.indexes.search_engine import SearchEngine

_REASON_TAG = re.compile(r"<\s*reason\s*>(.*?)(?:<\s*/\s*reason\s*>|$)", re.I | re.S)


@dataclass(frozen=True)
class BaselineParts:
    """What both baselines run on: the shared services, the task, and their settings."""

    llm: ChatClient
    search: SearchEngine
    prompts: PromptLibrary
    task: Task
    k: int = 20  # passages retrieved for the claim
    threshold: float = 0.5


class SearchOnce(ABC):
    """Shared first stage of both baselines: one search for the claim text; ``run`` does the rest."""

    name = "baseline"
    score_kind: ScoreKind = "probability"
    reads: ClassVar[tuple[str, ...]] = ("llm.", "retrieval.", "baselines.", "prompts.", "agent.threshold")

    def __init__(self, parts: BaselineParts, *, on_step: StepListener | None = None):
        self.parts = parts
        self.on_step = on_step

    @classmethod
    def threshold_of(cls, config: Any) -> float:
        """The threshold its scores are read with (``agent.threshold``)."""
        return config.agent.threshold

    @classmethod
    def from_config(cls, parts: SystemParts) -> "SearchOnce":
        """The baseline over the configuration's search engine (``baselines.k`` passages)."""
        config = parts.config
        return cls(BaselineParts(llm=parts.llm, search=parts.search(), prompts=parts.prompts, task=parts.task,
                                 k=config.baselines.k, threshold=float(cls.threshold_of(config))), on_step=parts.on_step)

    @property
    def prompts(self) -> PromptLibrary:
        """The prompt library the baseline renders (a run directory records its fingerprint)."""
        return self.parts.prompts

    def _emit(self, item: TraceItem, documents: int) -> None:
        if step_listeners(self.on_step):
            report_step(self.on_step, {"item": item.model_dump(mode="json"), "steps": 0, "documents": documents})

    async def _retrieve(self, claim: Claim, assessment: Assessment) -> list[Evidence]:
        hits = await self.parts.search.search(claim.text, exclude_title=claim.context.document_title or None, k=self.parts.k,
                                              language=claim.context.language)
        evidence = [Evidence.from_hit(hit, n) for n, hit in enumerate(hits, start=1)]
        item = TraceItem(action_name="search", action_argument=claim.text, action_output=[e.trace_view() for e in evidence])
        assessment.evidence = evidence
        assessment.trace.append(item)
        self._emit(item, len(evidence))
        return evidence

    async def assess(self, claim: Claim) -> Assessment:
        """The baseline's answer for one claim (an error in it is recorded, never raised)."""
        started = time.perf_counter()
        assessment = Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text,
                                score_kind=self.score_kind, threshold=self.parts.threshold)
        with track_usage() as usage:
            try:
                await self.run(claim, assessment)
            except ClaireError as error:
                assessment.error = str(error)
        assessment.usage = usage.to_dict()
        assessment.latency_s = round(time.perf_counter() - started, 3)
        if assessment.score is None and assessment.label is None and assessment.error is None:
            assessment.error = "no score was produced"
        assessment.decide()
        return assessment

    @abstractmethod
    async def run(self, claim: Claim, assessment: Assessment) -> None:
        """Fill in the assessment's evidence, trace, score and reasoning."""


class RetrieveAndVerify(SearchOnce):
    """Search once, then the task's verifier over the passages found."""

    name = "rav"

    async def run(self, claim: Claim, assessment: Assessment) -> None:
        """Retrieve, then judge."""
        parts = self.parts
        evidence = await self._retrieve(claim, assessment)
        verdict = await parts.task.judge(claim, evidence, clarifications=[], llm=parts.llm, prompts=parts.prompts)
        items = verdict_items(verdict)
        assessment.trace.extend(items)
        self._emit(items[-1], len(evidence))
        assessment.score, assessment.label = verdict.score, verdict.label
        assessment.evidence_elements = verdict.evidence_elements
        assessment.restated_claim = verdict.restated_claim
        assessment.reasoning = verdict.analysis
        assessment.error = verdict.error


def read_nli_label(answer: str | Answer) -> str | None:
    """The NLI label of an answer: the typed answer's, else read leniently from its text."""
    return getattr(answer, "label", None) if isinstance(answer, Answer) else nli_label(answer)


class NLIPipeline(SearchOnce):
    """Search once, then one NLI call per passage; the score is the number of REFUTES."""

    name = "nli"
    score_kind: ScoreKind = "count"

    @classmethod
    def threshold_of(cls, config: Any) -> float:
        """A count of REFUTES passages (``baselines.nli_threshold``)."""
        return config.baselines.nli_threshold

    async def _judge(self, claim: Claim, document: Evidence) -> NLIJudgement:
        parts = self.parts
        prompt = parts.prompts.render("nli", claim=claim.text, context=claim.context, document=document)
        try:  # an unreadable label is asked for once more
            asked = await parts.llm.ask(
                prompt, read_nli_label,
                follow_up=lambda problem, detail="": parts.prompts.render("follow_up", wanted="nli_label", problem=problem, detail=detail))
        except ClaireError as error:
            return NLIJudgement(n=document.n, label=None, reason=None, error=str(error))
        answer, label = asked.text, asked.value
        if asked.schema_error:  # JSON that never fitted its shape fails the call; it is never counted as a label
            return NLIJudgement(n=document.n, label=None, reason=None, error=asked.failure("the NLI step", "nli_label"))
        reasons = [asked.parsed.reason] if asked.parsed is not None else _REASON_TAG.findall(answer)
        cited = "\n".join(getattr(asked.parsed, "evidence", [])) if asked.parsed is not None else answer
        return NLIJudgement(
            n=document.n, label=label, reason=reasons[-1].strip() if reasons else answer.strip()[:300],
            elements=cited_elements(cited, known_elements([document])),
            error=None if label else f"unparseable NLI answer counted as NOT ENOUGH INFO: {answer.strip()[:120]!r}")

    async def run(self, claim: Claim, assessment: Assessment) -> None:
        """Retrieve, judge every passage at once, count."""
        evidence = await self._retrieve(claim, assessment)
        judgements = await asyncio.gather(*(self._judge(claim, document) for document in evidence))
        for judgement in judgements:
            output: dict[str, Any] = {"label": judgement.label or "NOT ENOUGH INFO", "reason": judgement.reason}
            if judgement.elements:
                output["evidence"] = judgement.elements
            assessment.trace.append(TraceItem(action_name="nli", action_argument=judgement.n, action_output=output))
        failed = [j for j in judgements if j.error and j.label is None and j.reason is None]
        if evidence and len(failed) == len(evidence):
            assessment.error = f"every NLI call failed: {failed[0].error}"
            return
        if failed:  # a count over fewer passages is not comparable: an error, retried by --retry-errors
            assessment.error = f"{len(failed)} of {len(evidence)} NLI calls failed: {failed[0].error}"
        counts = {label: sum(1 for j in judgements if (j.label or "NOT ENOUGH INFO") == label) for label in NLI_LABELS}
        assessment.score = float(counts["REFUTES"])
        assessment.details = {
            "counts": counts,
            "refutes_fraction": counts["REFUTES"] / len(evidence) if evidence else 0.0,
            "refuting_passages": [j.n for j in judgements if j.label == "REFUTES"],
            "unparsed": [j.n for j in judgements if j.error and j not in failed],
        }
        label, elements = self.parts.task.nli_outcome(judgements)
        if label is not None:
            assessment.label, assessment.evidence_elements = label, elements
        assessment.reasoning = "\n".join(
            f"[{j.n}] {j.label or 'NOT ENOUGH INFO'}: {j.reason}" for j in judgements if j.label in ("REFUTES", "SUPPORTS")
        ) or "No passage supports or refutes the claim."
