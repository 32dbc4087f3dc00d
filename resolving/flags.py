"""Resolving a flag: the one entry point every surface calls (``claire resolve``, ``claire check
--resolve``, the web app and its Patrol tab, the corpus run's worklist).

:func:`resolve_flags` takes flagged checks (a claim and its assessment each), asks the model to
name each one's conflict from the research's own answer, builds the cases, and resolves each
distinct contradiction once: two flags whose cases pair the same two statements (the same blocks,
in either order) share one decision. :class:`Resolutions` remembers decisions by contradiction, so
a surface that resolves flags one at a time (the web app) gives the same answer to the same
contradiction however it was reached.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from claire.domain import Assessment, Claim
from claire.resolving.cases import case_from_check, name_conflict
from claire.resolving.infoboxes import dispute_numbers
from claire.tasks.sides.records import Resolution, Side, SidesCase

if TYPE_CHECKING:
    from claire.config import Config
    from claire.indexes.registry import Searcher
    from claire.llm.client import ChatClient


def _where(side: Side) -> str:
    return side.block_id or f"{side.document_title}::{' '.join((side.sentence or side.text).split()).casefold()}"


def contradiction_key(case: SidesCase) -> str:
    """What makes two cases one contradiction: the two statements' blocks (else their article and
    sentence), in either order."""
    return " <> ".join(sorted((_where(case.fact), _where(case.passage))))


@dataclass
class Resolutions:
    """Decisions already taken, by contradiction (:func:`contradiction_key`)."""

    by_key: dict[str, Resolution] = field(default_factory=dict)
    pending: dict[str, asyncio.Future[Any]] = field(default_factory=dict)  # resolves under way, shared by whoever asks


@dataclass
class ResolvedFlag:
    """One flag's outcome: its case (None when no passage could be named) and the decision."""

    claim: Claim
    case: SidesCase | None
    resolution: Resolution | None
    key: str | None = None


def _values(case: SidesCase) -> frozenset[str] | None:
    if not case.values or case.values_from == "word overlap":
        return None
    return frozenset(" ".join(v.casefold().split()) for v in case.values)


def _disputed(case: SidesCase) -> frozenset[tuple[float, ...]] | None:
    if not case.values or case.values_from == "word overlap":
        return None
    return dispute_numbers(case.values[0], case.fact.language, case.values[1], case.passage.language)


def same_contradictions(cases: Sequence[SidesCase | None]) -> list[list[int]]:
    """The cases grouped by contradiction, as lists of their positions: two cases are one
    contradiction when they pair the same two statements (in either order, :func:`contradiction_key`),
    when they share one statement and dispute the same two values (a fact contradicted by two
    passages that give one value, or by both ends of one pair), or when one article stands on one
    side of the same disputed figures in both (its sentence and its infobox row both give 1890
    where the other editions give 1889, :func:`~claire.resolving.infoboxes.dispute_numbers`)."""
    parent = list(range(len(cases)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen: dict[Any, int] = {}
    for i, case in enumerate(cases):
        if case is None:
            continue
        marks: list[Any] = [contradiction_key(case)]
        values = _values(case)
        if values is not None:
            marks += [(_where(case.fact), values), (_where(case.passage), values)]
        figures = _disputed(case)
        if figures is not None:
            marks += [("article", side.language, side.document_title, figures) for side in (case.fact, case.passage)]
        for mark in marks:
            if mark in seen:
                parent[root(i)] = root(seen[mark])
            else:
                seen[mark] = i
    groups: dict[int, list[int]] = {}
    for i, case in enumerate(cases):
        if case is not None:
            groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _representative(cases: Sequence[SidesCase], members: list[int]) -> int:
    """The case a group is resolved with: values the model named, then the most cited passage."""
    return min(members, key=lambda i: (cases[i].values_from != "model",
                                       -(len(cases[i].passage.citations) + len(cases[i].fact.citations)), i))


async def resolve_flags(config: Config, flags: Sequence[tuple[Claim, Assessment]], *, retriever: Searcher | None,
                        llm: ChatClient | None = None, memo: Resolutions | None = None,
                        concurrency: int | None = None,
                        cases: Sequence[tuple[Claim, SidesCase]] = ()) -> list[ResolvedFlag]:
    """Each flag's case and decision, in the order given (see the module docstring): one resolve
    per distinct contradiction (:func:`same_contradictions`), through the executor. ``cases`` are
    contradictions already named (the infobox pass's mismatches, with the fact each starts from):
    they are grouped with the flags' and resolved alike, and come last in the answer."""
    from claire.agent.runtime import open_system
    from claire.runs.executor import Executor

    memo = memo if memo is not None else Resolutions()
    given = list(cases)
    resolving = config.with_overrides({"agent.system": "resolve", "agent.task": "sides"})
    executor = Executor.for_config(config, concurrency or config.eval.concurrency)
    async with open_system(resolving, llm=llm, retriever=retriever) as resolver:
        async def case_of(claim: Claim, assessment: Assessment) -> SidesCase | None:
            async with executor.slot():
                conflict = await name_conflict(claim, assessment, resolver.llm, resolver.prompts)
            return await asyncio.to_thread(case_from_check, claim, assessment, retriever, conflict)

        named = list(await asyncio.gather(*(case_of(claim, assessment) for claim, assessment in flags)))
        cases: list[SidesCase | None] = [*named, *(case for _, case in given)]
        groups = same_contradictions(cases)

        async def decide(members: list[int]) -> Resolution:
            keys = [contradiction_key(cases[i]) for i in members]  # type: ignore[arg-type]
            known = next((memo.by_key[k] for k in keys if k in memo.by_key), None)
            if known is not None:
                return known
            lead_at = _representative(cases, members)  # type: ignore[arg-type]
            lead = contradiction_key(cases[lead_at])  # type: ignore[arg-type]
            if lead not in memo.pending:
                case = cases[lead_at]
                assert case is not None
                memo.pending[lead] = asyncio.ensure_future(executor.check(resolver, case, key=case.claim_id))
            try:
                checked = await asyncio.shield(memo.pending[lead])
                found = checked.result or Resolution(claim_id=checked.key, error=checked.error or "no answer")
            finally:
                if memo.pending.get(lead) is not None and memo.pending[lead].done():
                    memo.pending.pop(lead, None)
            if found.decision is not None:
                memo.by_key.update({k: found for k in keys})
            return found

        decided = await asyncio.gather(*(decide(members) for members in groups))
    outcome: dict[int, tuple[Resolution, str]] = {}
    for members, resolution in zip(groups, decided):
        group_key = min(contradiction_key(cases[i]) for i in members)  # type: ignore[arg-type]
        outcome.update({i: (resolution, group_key) for i in members})
    claims = [claim for claim, _ in flags] + [claim for claim, _ in given]
    return [ResolvedFlag(claim=claim, case=cases[i], resolution=outcome.get(i, (None, None))[0],
                         key=outcome.get(i, (None, None))[1])
            for i, claim in enumerate(claims)]


async def resolve_flag(config: Config, claim: Claim, assessment: Assessment, *, retriever: Searcher | None,
                       llm: ChatClient | None = None, memo: Resolutions | None = None) -> Resolution | None:
    """One flag resolved (None when no passage in conflict could be named)."""
    return (await resolve_flags(config, [(claim, assessment)], retriever=retriever, llm=llm, memo=memo))[0].resolution
