"""The FEVEROUS task: is a claim supported, refuted, or beyond the evidence? Systems answer
FEVEROUS's three-way label with the ids of the elements (sentences, table cells, ...) they rely
on; runs are scored with FEVEROUS's own measures (label accuracy, the FEVEROUS score, evidence
precision and recall).

``dataset`` reads the published JSONL, ``judge`` the verifier's and NLI answers, ``scoring`` the
metrics and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from claire.domain import Claim, Evidence, ScoreKind
from claire.errors import ExitCode
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.tasks.base import NLIJudgement, Task, Judgement
from claire.tasks.feverous.dataset import load_feverous_claims
from claire.tasks.feverous.judge import combine_nli, judge_label
from claire.tasks.feverous.scoring import feverous_metrics, write_outputs
from claire.tasks.measures import pct


class Feverous(Task):
    """FEVEROUS's three-way verdict with cited evidence elements."""

    name = "feverous"
    prompt_variants = {"controller": "feverous", "verifier": "feverous", "nli": "feverous"}
    always_finish = True  # its controller finishes once every part of the claim is covered

    def load_claims(self, path: str | Path) -> list[Claim]:
        """The claims of a FEVEROUS JSONL file, with their gold labels and evidence sets."""
        return load_feverous_claims(path)

    async def judge(self, claim: Claim, documents: Sequence[Evidence], *, clarifications: list[dict[str, str]],
                    llm: ChatClient, prompts: PromptLibrary, explanations: Sequence[dict[str, str]] = ()) -> Judgement:
        """A label with the element ids it rests on."""
        return await judge_label(claim, documents, clarifications, llm, prompts)  # FEVEROUS's verifier reads no background notes

    def nli_outcome(self, judgements: list[NLIJudgement]) -> tuple[str | None, list[str]]:
        """The NLI pipeline's label and evidence, combined from its per-passage labels."""
        return combine_nli(judgements)

    def exit_code(self, verdict: str | None, label: str | None) -> int:
        """1 when the claim is refuted."""
        return ExitCode.FLAGGED if label == "REFUTES" else ExitCode.OK

    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None,
              score_kind: ScoreKind = "probability") -> dict[str, Any]:
        """Label accuracy, the FEVEROUS score and evidence precision/recall/F1."""
        return feverous_metrics(predictions, system=system)

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """Label accuracy, the FEVEROUS score and evidence P/R/F1."""
        return [f"label accuracy {pct(metrics['accuracy'])} · FEVEROUS score {pct(metrics['feverous_score'])} · evidence "
                f"P {pct(metrics['evidence_precision'])} R {pct(metrics['evidence_recall'])} "
                f"F1 {pct(metrics['evidence_f1'])} · {metrics['covers']}"]

    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """metrics.json and report.md (no ROC plot: there is no score)."""
        write_outputs(out_dir, metrics, predictions)
