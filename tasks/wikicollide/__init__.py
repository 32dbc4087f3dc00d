"""The WikiCollide task (the default): is a fact contradicted elsewhere in the corpus? Systems
answer an inconsistency score in [0, 1] (the NLI pipeline: a count of REFUTES passages) and a
verdict at the threshold; runs are scored by AUROC, accuracy/F1 and recall per inconsistency type.

``dataset`` reads the published files, ``judge`` the verifier's answer, ``scoring`` the metrics
and ``report`` what a person reads after a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from claire.domain import Claim, Evidence, ScoreKind
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.tasks.base import Task, Judgement
from claire.tasks.wikicollide.dataset import SPLITS, infer_split, load_wikicollide
from claire.tasks.wikicollide.judge import judge_score
from claire.tasks.measures import auroc_text, pct
from claire.tasks.wikicollide.report import describe_setup, paper_notices, plot_roc, write_outputs
from claire.tasks.wikicollide.scoring import best_f1_threshold, compute_metrics, recalibrate


class WikiCollide(Task):
    """Corpus-level inconsistency detection, scored as the paper does."""

    name = "wikicollide"
    threshold_protocol = True
    sweepable = True

    def load_claims(self, path: str | Path) -> list[Claim]:
        """The claims of a WikiCollide file (JSON array or JSONL), gold labels kept."""
        return load_wikicollide(path)

    async def judge(self, claim: Claim, documents: Sequence[Evidence], *, clarifications: list[dict[str, str]],
                    llm: ChatClient, prompts: PromptLibrary, explanations: Sequence[dict[str, str]] = ()) -> Judgement:
        """The inconsistency score of the claim given the passages."""
        return await judge_score(claim, documents, clarifications, llm, prompts, explanations=explanations)

    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None,
              score_kind: ScoreKind = "probability") -> dict[str, Any]:
        """AUROC with its bootstrap interval, accuracy, P, R, F1 and recall per inconsistency type."""
        return compute_metrics(predictions, threshold=threshold, system=system, score_kind=score_kind)

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """AUROC with its interval and what the metrics cover."""
        lines = [f"AUROC {auroc_text(metrics)} · {metrics.get('covers', '')}"]
        full = metrics.get("full_set")
        if full:
            lines.append(f"over all {full['claims']} claims, an error counted as consistent: AUROC {pct(full['auroc'])}, "
                         f"accuracy {pct(full['accuracy'])}, F1 {pct(full['f1'])}")
        return lines

    def plot_runs(self, curves: Sequence[tuple[str, list[dict[str, Any]]]], path: Path, *, title: str) -> bool:
        """The runs' ROC curves in one figure."""
        return plot_roc(curves, path, title=title)

    splits = SPLITS

    def split_of(self, path: str | Path) -> str | None:
        """validation for dev/val files, test for test files (by file name)."""
        return infer_split(path)

    def setup(self, config_public: dict[str, Any], reads: Callable[[str], bool]) -> dict[str, Any] | None:
        """The run's model, index and every setting its system reads that differs from the paper's method."""
        return describe_setup(config_public, reads)

    def best_threshold(self, predictions: list[dict[str, Any]], score_kind: ScoreKind, grid: float | None = None) -> float:
        """The best-F1 threshold of a validation run, as the paper reuses it on test."""
        return best_f1_threshold(predictions, score_kind, grid)

    def notices(self, config_public: dict[str, Any], *, split: str | None, threshold_given: bool) -> list[str]:
        """The paper preset's departures a run says before it starts: an embedder other than mGTE,
        and a test split scored without a validation run to take the threshold from."""
        return paper_notices(config_public, split=split, threshold_given=threshold_given)

    def calibrate(self, predictions: list[dict[str, Any]], validation: list[dict[str, Any]], *, source: str,
                  method: str) -> tuple[dict[str, Any], Any]:
        """Calibration after an isotonic or Platt map fitted on the validation run's scores."""
        return recalibrate(predictions, validation, source=source, method=method)

    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """metrics.json, report.md and roc.png."""
        write_outputs(out_dir, metrics, predictions)
