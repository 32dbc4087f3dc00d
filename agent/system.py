"""The System interface every system speaks — ``async assess(claim) -> Assessment`` for ``claire``
(the agent), ``rav`` (retrieve-and-verify) and ``nli`` (the NLI pipeline) alike — so evaluation,
sweeps, the web app and the CLI never special-case a system. ``agent.runtime.open_system`` makes
one from the resolved configuration.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol

from claire.domain import Assessment, Claim, ScoreKind

if TYPE_CHECKING:  # the types only: a system module imports this one, never the other way round
    from claire.config import Config
    from claire.indexes.registry import Searcher
    from claire.indexes.search_engine import SearchEngine
    from claire.llm.client import ChatClient, NoLLM
    from claire.prompts import PromptLibrary
    from claire.tasks.base import Task

StepListener = Callable[[dict[str, Any]], None]
"""Called with ``{"item": trace item, "steps": n, "documents": n}`` as each step is taken."""

_listener: ContextVar[StepListener | None] = ContextVar("claire_step_listener", default=None)


@contextmanager
def steps_to(listener: StepListener | None) -> Iterator[None]:
    """Within this block (this task and the tasks it starts), every system reports its steps to
    ``listener`` as well as to its own: one system serves many claims, each heard by its caller."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def step_listeners(own: StepListener | None) -> list[StepListener]:
    """Who hears a system's steps now: its own listener and the caller's (:func:`steps_to`)."""
    return [listener for listener in (own, _listener.get()) if listener is not None]


def report_step(own: StepListener | None, event: dict[str, Any]) -> None:
    """Hand one step to everyone listening."""
    for listener in step_listeners(own):
        listener(event)


@dataclass
class SystemParts:
    """Everything a system may be built from: the resolved configuration, the open LLM client and
    retriever, the prompt library, the task, the person reviewing flagged verdicts (interactive
    checks) and the listener of its steps. ``search()`` is the configured search engine over the
    retriever (RankGPT reranking when on), made once; ``build(name)`` another system by name (a
    cascade's stages). Every system — built in or written outside CLAIRE — is made by its class's
    ``from_config(parts)``."""

    config: Config
    llm: ChatClient | NoLLM  # NoLLM for a system that declares it calls none
    retriever: Searcher
    prompts: PromptLibrary
    task: Task
    make_search: Callable[[], SearchEngine]
    build: Callable[..., System]
    reviewer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None  # asks a person (interactive checks)
    on_step: StepListener | None = None
    _search: SearchEngine | None = field(default=None, repr=False)

    def search(self) -> SearchEngine:
        """The search engine (claire.indexes.search_engine.SearchEngine), made on first use."""
        if self._search is None:
            self._search = self.make_search()
        return self._search


class CalibratedSystem:
    """A system whose answers also carry the calibrated probability of their score (the verdict
    stays the score's); everything else is the wrapped system's."""

    def __init__(self, system: Any, calibrator: Any):
        self.system = system
        self.calibrator = calibrator
        self.name = system.name
        self.score_kind = getattr(system, "score_kind", "probability")

    def __getattr__(self, name: str) -> Any:  # prompts, ...: the wrapped system's own
        found = getattr(self.system, name)  # an AttributeError when it has none (no resume for rav, ...)
        if name != "resume":
            return found

        async def resume(thread_id: str) -> Assessment:
            """A resumed interactive check's answer, with the probability."""
            return self.calibrated(await found(thread_id))

        return resume

    def calibrated(self, assessment: Assessment) -> Assessment:
        """The assessment with the probability of its score (none for a REFUTES count)."""
        if assessment.score is not None and assessment.score_kind == "probability":
            assessment.probability = round(self.calibrator.probability(assessment.score), 4)
        return assessment

    async def assess(self, claim: Claim, **kwargs: Any) -> Assessment:
        """The wrapped system's answer, with the probability."""
        return self.calibrated(await self.system.assess(claim, **kwargs))


class System(Protocol):
    """Anything that assesses claims; ``score_kind`` says what its scores are (a probability-like
    score in [0, 1], or a count), and so how a threshold reads them. A system's class is made into
    one by ``from_config(parts: SystemParts)``; ``answers_task`` (optional) names the only task it
    answers."""

    name: str
    score_kind: ScoreKind

    async def assess(self, claim: Claim) -> Assessment:
        """The system's answer for one claim (never raises for a claim it could not answer)."""
        ...
