"""The WikiCollide task (the default): is a fact contradicted elsewhere in the corpus? Systems
answer an inconsistency score in [0, 1] (the NLI pipeline: a count of REFUTES passages) and a
verdict at the threshold; runs are scored by AUROC, accuracy/F1 and recall per inconsistency type.

``dataset`` reads the published files, ``judge`` the verifier's answer, ``scoring`` the metrics
and ``report`` what a person reads after a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from claire.indexes.evidence import Evidence
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.tasks.base import Task, Verdict
from claire.tasks.records import Claim
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.tasks.wikicollide.judge import judge_score
from claire.tasks.wikicollide.report import auroc_text, write_outputs
from claire.tasks.wikicollide.scoring import compute_metrics


class WikiCollide(Task):
    """Corpus-level inconsistency detection, scored as the paper does."""

    name = "wikicollide"
    threshold_protocol = True
    sweepable = True

    def load_claims(self, path: str | Path) -> list[Claim]:
        """The claims of a WikiCollide file (JSON array or JSONL), gold labels kept."""
        return load_wikicollide(path)

    async def judge(self, claim: Claim, documents: Sequence[Evidence], *, clarifications: list[dict[str, str]],
                    llm: ChatClient, prompts: PromptLibrary, explanations: Sequence[dict[str, str]] = ()) -> Verdict:
        """The inconsistency score of the claim given the passages."""
        return await judge_score(claim, documents, clarifications, llm, prompts, explanations=explanations)

    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None) -> dict[str, Any]:
        """AUROC with its bootstrap interval, accuracy, P, R, F1 and recall per inconsistency type."""
        return compute_metrics(predictions, threshold=threshold, system=system)

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """AUROC with its interval and what the metrics cover."""
        return [f"AUROC {auroc_text(metrics)} · {metrics.get('covers', '')}"]

    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """metrics.json, report.md and roc.png."""
        write_outputs(out_dir, metrics, predictions)
