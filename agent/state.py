"""What one CLAIRE research run holds (:class:`ResearchState`, the graph's state) and what it is
run with (:class:`ResearchContext`, the graph's run context).

Lists grow through reducers: a node or tool returns only what it adds. ``messages`` is the
controller's working memory in LangChain form — the action it chose (an ``AIMessage`` with one
tool call), what the action observed (a ``ToolMessage``; its artifact is what the trace records),
and a reviewer's comment on a flagged verdict (a ``HumanMessage`` from the reviewer) — from which
the prompt's history and the step count are derived.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AnyMessage

from claire.domain import Claim, Evidence, TraceItem
from claire.tasks.base import Task, Judgement
from claire.tools.context import ToolContext


@dataclass
class ResearchState:
    """The research on one claim so far."""

    claim: Claim
    messages: Annotated[list[AnyMessage], operator.add] = field(default_factory=list)
    evidence: Annotated[list[Evidence], operator.add] = field(default_factory=list)  # numbered [n], first seen first
    clarifications: Annotated[list[dict[str, str]], operator.add] = field(default_factory=list)
    explanations: Annotated[list[dict[str, str]], operator.add] = field(default_factory=list)
    reports: Annotated[list[str], operator.add] = field(default_factory=list)  # reported inconsistencies
    trace: Annotated[list[TraceItem], operator.add] = field(default_factory=list)
    errors: Annotated[list[str], operator.add] = field(default_factory=list)
    stop_reason: str | None = None  # set when the research is over
    condensed: list[int] = field(default_factory=list)  # steps the context budget has shortened so far
    queued: list[dict[str, Any]] = field(default_factory=list)  # further tool calls of one answer, run one a step
    verdict: Judgement | None = None
    report: dict[str, str] | None = None  # the two-sided report: {"consistent": ..., "inconsistent": ...}
    review: dict[str, Any] | None = None  # a person's decision on a flagged verdict: {"decision", "comment"}


@dataclass(frozen=True)
class ResearchContext(ToolContext):
    """The services and settings of one run: what the tools read, plus the controller's and
    verifier's own settings."""

    task: Task | None = None
    max_steps: int = 10
    keep_observations: int = 2  # latest observations kept whole when older ones are condensed
    thoughts: bool = True  # the controller writes a thought before each action, kept in its history
    parallel_actions: bool = False  # several actions of one answer run as successive steps (else only the first)
    report: bool = False  # write the two-sided report after the verdict
    threshold: float = 0.5  # a score above it flags the claim (what a person is asked to review)
    review: bool = False  # a person confirms or rejects a flagged verdict (interactive runs)
