"""What every task provides: :class:`Task`, the strategy a run's ``agent.task`` (or ``claire eval
--task``) selects — the prompt variants its systems render, how a verifier's answer is judged,
how the NLI pipeline's per-passage labels combine, how claims are read from the task's files and
how a run is scored and reported — and :class:`Judgement`, what a judge returns.

:func:`judging_prompt` renders a judging template (verifier, two-sided report) with the gathered
passages de-duplicated, most relevant first, cut to fit the model's context window.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from langchain_core.messages import BaseMessage

from claire.errors import ConfigError, ExitCode
from claire.domain import Claim, Evidence, ScoreKind
from claire.prompts.budget import FitNote, fit_documents
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from pydantic import BaseModel

from claire.tasks.fact_limits import check_claims
from claire.tasks.records import Prediction, failed_prediction, prediction_from


@dataclass
class Judgement:
    """A verifier's judgement of one claim: a score (WikiCollide) or a label with cited elements
    (FEVEROUS), with the restated claim and analysis, the raw answer and what went wrong."""

    score: float | None = None
    label: str | None = None
    evidence_elements: list[str] = field(default_factory=list)
    restated_claim: str | None = None
    analysis: str | None = None
    raw: str = ""
    error: str | None = None
    fit: FitNote | None = None  # what the context budget left out of the prompt


@dataclass
class NLIJudgement:
    """The NLI pipeline's reading of one passage: a label (None when unreadable), the reason, the
    elements it cited, and the error when the call failed or could not be read."""

    n: int
    label: str | None
    reason: str | None
    elements: list[str] = field(default_factory=list)
    error: str | None = None


def judging_prompt(name: str, claim: Claim, documents: Sequence[Evidence], clarifications: list[dict[str, str]],
                   llm: ChatClient, prompts: PromptLibrary, *, explanations: Sequence[dict[str, str]] = (),
                   reserve: int = 0) -> tuple[list[BaseMessage], FitNote]:
    """Render template ``name`` over the claim, the research's notes (entity clarifications and
    background explanations) and its passages, fitted to the model's window with room for the
    answer (and ``reserve`` more tokens)."""

    def render(docs: list[Evidence]) -> list[BaseMessage]:
        return prompts.render(name, claim=claim.text, context=claim.context, clarifications=clarifications,
                              explanations=list(explanations), documents=docs)

    _, messages, note = fit_documents(render, list(documents), claim=claim.text, count=llm.count_tokens,
                                      budget=llm.prompt_budget() - reserve, prompt=name)
    return messages, note


class Task(ABC):
    """A task: what a run asks the systems, how their answers are judged and how a run is scored."""

    name: ClassVar[str]
    prompt_variants: ClassVar[dict[str, str]] = {}
    """Template name -> variant this task renders (a user's ``prompts.variants`` win)."""
    always_finish: ClassVar[bool] = False
    """Whether the controller may finish() whatever agent.finish_action says (a task whose research
    gathers evidence toward a verdict, not the paper's search for a contradiction)."""

    @abstractmethod
    def load_claims(self, path: str | Path) -> list[Any]:
        """The records of one of this task's data files (their published format)."""

    async def judge(self, claim: Claim, documents: Sequence[Evidence], *, clarifications: list[dict[str, str]],
                    llm: ChatClient, prompts: PromptLibrary, explanations: Sequence[dict[str, str]] = ()) -> Judgement:
        """The verifier's verdict on a claim given the gathered passages and notes."""
        raise ConfigError(f"the {self.name} task has no verifier")

    def nli_outcome(self, judgements: list[NLIJudgement]) -> tuple[str | None, list[str]]:
        """The NLI pipeline's task-specific answer from its per-passage judgements: (label, cited
        element ids); (None, []) when the task reads only the REFUTES count."""
        return None, []

    def exit_code(self, verdict: str | None, label: str | None) -> int:
        """``claire check``'s exit code for a result: 1 when it flags the claim, else 0."""
        return ExitCode.FLAGGED if verdict == "inconsistent" else ExitCode.OK

    records_name: ClassVar[str] = "claims"
    """What a run's records are called in messages."""

    index_setting: ClassVar[str] = "retrieval.index"
    """The setting ``--index`` names for this task's runs."""

    corpus_records: ClassVar[bool] = True
    """Whether the records come from a corpus that the run must search (so the demo index, searched
    because no index was named, would make the figures meaningless); False: the records carry
    their own evidence."""

    threshold_setting: ClassVar[str | None] = None
    """The setting ``--threshold`` sets (None: the system's own threshold, agent.threshold or a REFUTES count)."""

    system: ClassVar[str | None] = None
    """The one system that answers this task (``agent.system``), or None: claire, rav, nli and the
    cascade all do."""

    def input_warnings(self, records: list[Any], max_fact_chars: int, *, source: str) -> list[str]:
        """Warnings about the records before a run (a DatasetError for records that cannot be run)."""
        return check_claims(records, max_fact_chars, source=source)

    sweepable: ClassVar[bool] = False
    """Whether a sweep can compare runs of this task (it summarises AUROC)."""

    threshold_protocol: ClassVar[bool] = False
    """Whether runs are scored at a threshold that a test run takes from its validation run."""

    def default_threshold(self, config_public: dict[str, Any] | None) -> float:
        """The threshold a run of this task is scored with when none is given."""
        return 0.5

    def headline(self, metrics: dict[str, Any]) -> list[str]:
        """What ``claire eval`` prints of a finished run's metrics."""
        return []

    def plot_runs(self, curves: Sequence[tuple[str, list[dict[str, Any]]]], path: Path, *, title: str) -> bool:
        """Draw several runs' curves in one figure (a sweep's overlay): one (label, predictions) per
        run; whether anything was drawn."""
        return False

    splits: ClassVar[tuple[str, ...]] = ()
    """The dataset splits a run of this task may be (``--split``); none: the task has no splits."""

    def split_of(self, path: str | Path) -> str | None:
        """The split a data file holds, from its name (None: unknown, or the task has no splits)."""
        return None

    def setup(self, config_public: dict[str, Any], reads: Callable[[str], bool]) -> dict[str, Any] | None:
        """What a run's report says of its setup beside the method it follows (None: nothing);
        ``reads`` says whether the run's system reads a setting (a dotted key)."""
        return None

    def notices(self, config_public: dict[str, Any], *, split: str | None, threshold_given: bool) -> list[str]:
        """What a run should say once, before it starts, about how it departs from the method its
        task follows (none by default)."""
        return []

    def best_threshold(self, predictions: list[dict[str, Any]], score_kind: ScoreKind, grid: float | None = None) -> float:
        """The threshold a test run takes from a validation run's predictions (the best-F1 one; with
        ``grid``, the best of the multiples of it)."""
        raise ConfigError(f"--threshold-from is for WikiCollide runs, not the {self.name} task")

    def calibrate(self, predictions: list[dict[str, Any]], validation: list[dict[str, Any]], *, source: str,
                  method: str) -> tuple[dict[str, Any], Any]:
        """The calibration metrics of ``predictions`` through a calibrator fitted on ``validation``,
        and the calibrator (a ConfigError when the runs cannot be calibrated)."""
        raise ConfigError(f"--calibrate-from is for WikiCollide runs, not the {self.name} task")

    line_model: ClassVar[type[BaseModel]] = Prediction
    """The model of one line of a run's predictions.jsonl."""

    def line(self, record: Any, result: Any) -> BaseModel:
        """The predictions.jsonl line of one record's result."""
        return prediction_from(result, record)

    def failed_line(self, record: Any, system: str, error: str, usage: dict[str, Any], latency_s: float) -> BaseModel:
        """The line of a record whose check broke with an unexpected error."""
        return failed_prediction(record, system, error, usage, latency_s)

    @abstractmethod
    def score(self, predictions: list[dict[str, Any]], *, threshold: float, system: str | None,
              score_kind: ScoreKind = "probability") -> dict[str, Any]:
        """The metrics of a run's predictions (``score_kind``: what the system's scores are)."""

    @abstractmethod
    def write_outputs(self, out_dir: Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
        """Write the run directory's metrics.json, report.md and plots."""
