"""The paper's two baselines on CLAIRE's parts: retrieve-and-verify (``rav``) and the NLI pipeline
(``nli``). Both search once for the claim (k=20, the claim's article excluded, reranked when
enabled); ``rav`` then runs the shared verifier template, ``nli`` one NLI call per passage.
"""

from __future__ import annotations

import asyncio
import re
import time
from abc import ABC, abstractmethod
from typing import Any

from claire.agent import feverous_task
from claire.agent.claire_agent import StepListener, evidence_from_hit
from claire.agent.llm import LLMClient
from claire.agent.system import Assessment, Claim, Evidence, TraceItem
from claire.agent.usage import track_usage
from claire.agent.verifier import verify
from claire.config import Config
from claire.errors import ClaireError
from claire.prompts import PromptLibrary
from claire.tools.search import SearchTool

NLI_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_EXACT = re.compile(r"NOT ENOUGH INFO|SUPPORTS|REFUTES")
_SYNONYMS = [
    ("NOT ENOUGH INFO", re.compile(r"not\s*enough|insufficient|unknown|neutral|cannot\s+(?:be\s+)?(?:determined|verified)|\bnei\b|unrelated|irrelevant", re.I)),
    ("REFUTES", re.compile(r"refute|contradict|\bfalse\b|disprove|inconsistent|conflict", re.I)),
    ("SUPPORTS", re.compile(r"support|entail|confirm|\btrue\b|consistent|agree", re.I)),
]
_NEGATED = re.compile(r"\b(?:not|no|never|neither|nor|doesn'?t|isn'?t|cannot|can'?t)\W+(?:\w+\W+){0,2}$", re.I)
_NEGATED_LABEL = re.compile(r"\b(?:NOT|NO|NEVER)\W*$")
_LABEL_TAG = re.compile(r"<\s*label\s*>(.*?)<\s*/\s*label\s*>", re.I | re.S)
_REASON_TAG = re.compile(r"<\s*reason\s*>(.*?)(?:<\s*/\s*reason\s*>|$)", re.I | re.S)


def parse_nli_label(text: str) -> str | None:
    """SUPPORTS / REFUTES / NOT ENOUGH INFO from a model answer, leniently; None if unreadable.

    The label as written (in its tag, else the answer's first lines) wins; otherwise synonyms
    are read, a negated one ("does not contradict") counting as NOT ENOUGH INFO.
    """
    tags = _LABEL_TAG.findall(text or "")
    candidates = [tags[-1]] if tags else [line for line in (text or "").splitlines() if line.strip()][:2]
    for candidate in candidates:
        exact = set(_EXACT.findall(candidate.upper() if tags else candidate))
        if len(exact) == 1 and not _NEGATED_LABEL.search(candidate.upper().split(next(iter(exact)))[0]):
            return exact.pop()
        for label, pattern in _SYNONYMS:
            match = pattern.search(candidate)
            if match:
                return "NOT ENOUGH INFO" if _NEGATED.search(candidate[: match.start()]) else label
    return None


class _SearchOnce(ABC):
    """Shared first stage of both baselines: one search for the claim text; ``_run`` does the rest."""

    name = "baseline"

    def __init__(self, *, config: Config, llm: LLMClient, search: SearchTool, prompts: PromptLibrary, on_step: StepListener | None = None):
        self.config = config
        self.llm = llm
        self.search_tool = search
        self.prompts = prompts
        self.on_step = on_step

    def _emit(self, item: dict[str, Any], documents: int) -> None:
        if self.on_step:
            self.on_step({"item": item, "steps": 0, "documents": documents})

    async def _retrieve(self, claim: Claim) -> tuple[list[Evidence], dict[str, Any]]:
        hits = await self.search_tool.search(claim.text, exclude_title=claim.context.document_title or None, k=self.config.baselines.k)
        evidence = [evidence_from_hit(hit, n) for n, hit in enumerate(hits, start=1)]
        item = {"action_name": "search", "action_argument": claim.text,
                "action_output": [{k: getattr(e, k) for k in ("n", "block_id", "document_title", "section_title", "content", "url")} for e in evidence]}
        self._emit(item, len(evidence))
        return evidence, item

    async def assess(self, claim: Claim) -> Assessment:
        started = time.perf_counter()
        assessment = Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text, threshold=self._threshold())
        with track_usage() as usage:
            try:
                await self._run(claim, assessment)
            except ClaireError as error:
                assessment.error = str(error)
        assessment.usage = usage.to_dict()
        assessment.latency_s = round(time.perf_counter() - started, 3)
        if assessment.score is None and assessment.label is None and assessment.error is None:
            assessment.error = "no score was produced"
        assessment.decide()
        return assessment

    def _threshold(self) -> float:
        return self.config.agent.threshold

    @abstractmethod
    async def _run(self, claim: Claim, assessment: Assessment) -> None:
        """Fill in the assessment's evidence, trace, score and reasoning."""


class RetrieveAndVerify(_SearchOnce):
    name = "rav"

    async def _run(self, claim: Claim, assessment: Assessment) -> None:
        evidence, search_item = await self._retrieve(claim)
        assessment.evidence = evidence
        assessment.trace.append(TraceItem.model_validate(search_item))
        verdict = await verify(claim, documents=evidence, clarifications=[], llm=self.llm, prompts=self.prompts, task=self.config.agent.task)
        if verdict.fit is not None and verdict.fit.changed:
            assessment.trace.append(TraceItem.model_validate(verdict.fit.trace_item()))
        item = {"action_name": "verifier", "action_argument": None,
                "action_output": {"inconsistency_score": verdict.score, "analysis": verdict.analysis}}
        if verdict.label is not None:
            item["action_output"].update(label=verdict.label, evidence=verdict.evidence_elements)
        assessment.label, assessment.evidence_elements = verdict.label, verdict.evidence_elements
        assessment.trace.append(TraceItem.model_validate(item))
        self._emit(item, len(evidence))
        assessment.score = verdict.score
        assessment.restated_claim = verdict.restated_claim
        assessment.reasoning = verdict.analysis
        assessment.error = verdict.error


class NLIPipeline(_SearchOnce):
    name = "nli"

    def _threshold(self) -> float:
        return float(self.config.baselines.nli_threshold)

    async def _judge(self, claim: Claim, doc: Evidence) -> dict[str, Any]:
        document = {"n": doc.n, "document_title": doc.document_title, "section_title": doc.section_title, "content": doc.content,
                    "rows": feverous_task.element_rows(doc.elements)}
        try:
            response = await self.llm.chat(self.prompts.render("nli", claim=claim.text, context=claim.context.model_dump(), document=document))
        except ClaireError as error:
            return {"n": doc.n, "label": None, "reason": None, "error": str(error)}
        label = parse_nli_label(response.content)
        reasons = _REASON_TAG.findall(response.content)
        return {"n": doc.n, "label": label, "reason": (reasons[-1].strip() if reasons else response.content.strip()[:300]),
                "elements": feverous_task.cited_elements(response.content, feverous_task.known_elements([doc])),
                "error": None if label else f"unparseable NLI answer counted as NOT ENOUGH INFO: {response.content.strip()[:120]!r}"}

    async def _run(self, claim: Claim, assessment: Assessment) -> None:
        evidence, search_item = await self._retrieve(claim)
        assessment.evidence = evidence
        assessment.trace.append(TraceItem.model_validate(search_item))
        judgements = await asyncio.gather(*(self._judge(claim, doc) for doc in evidence))
        for doc, judgement in zip(evidence, judgements):
            item = {"action_name": "nli", "action_argument": doc.n,
                    "action_output": {"label": judgement["label"] or "NOT ENOUGH INFO", "reason": judgement["reason"]}}
            if judgement.get("elements"):
                item["action_output"]["evidence"] = judgement["elements"]
            assessment.trace.append(TraceItem.model_validate(item))
        failed = [j for j in judgements if j["error"] and j["label"] is None and j["reason"] is None]
        if evidence and len(failed) == len(evidence):
            assessment.error = f"every NLI call failed: {failed[0]['error']}"
            return
        if failed:  # a count over fewer passages is not comparable: an error, retried by --retry-errors
            assessment.error = f"{len(failed)} of {len(evidence)} NLI calls failed: {failed[0]['error']}"
        counts = {label: sum(1 for j in judgements if (j["label"] or "NOT ENOUGH INFO") == label) for label in NLI_LABELS}
        refuting = [j["n"] for j in judgements if j["label"] == "REFUTES"]
        assessment.score = float(counts["REFUTES"])
        assessment.details = {
            "counts": counts,
            "refutes_fraction": counts["REFUTES"] / len(evidence) if evidence else 0.0,
            "refuting_passages": refuting,
            "unparsed": [j["n"] for j in judgements if j["error"] and j not in failed],
        }
        if self.config.agent.task == "feverous":
            feverous_task.combine_nli(assessment, judgements)
        assessment.reasoning = "\n".join(
            f"[{j['n']}] {j['label'] or 'NOT ENOUGH INFO'}: {j['reason']}" for j in judgements if j["label"] in ("REFUTES", "SUPPORTS")
        ) or "No passage supports or refutes the claim."
