"""The one executor: resumable, idempotent work items into a sink, bounded concurrency shared by
every run, steps heard per item, failures kept."""

from __future__ import annotations

import asyncio

import pytest

from claire.agent.system import report_step
from claire.domain import Assessment, Claim
from claire.runs.executor import Executor, RecordResult, todo


# -- the executor ---------------------------------------------------------------------------------
class ListSink:
    """Outcomes in a list; ``held`` are keys it already holds (with their error)."""

    def __init__(self, held: dict[str, str | None] | None = None):
        self.held = dict(held or {})
        self.outcomes: list[RecordResult] = []
        self.started_keys: list[str] = []
        self.steps: dict[str, list[dict]] = {}

    def finished(self):
        return self.held

    def started(self, key):
        self.started_keys.append(key)

    def step(self, key):
        return lambda event: self.steps.setdefault(key, []).append(event)

    async def put(self, outcome):
        self.outcomes.append(outcome)
        self.held[outcome.key] = outcome.error


class CountingSystem:
    """Answers after a pause, counting how many claims it checks at once; ``fails`` raise."""

    name = "counting"
    score_kind = "probability"

    def __init__(self, fails: set[str] = frozenset()):
        self.running = 0
        self.most = 0
        self.fails = fails

    async def assess(self, claim: Claim) -> Assessment:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            report_step(None, {"item": {"action_name": "search"}, "steps": 1, "documents": 0})
            await asyncio.sleep(0.01)
            if claim.claim_id in self.fails:
                raise RuntimeError("broke")
            return Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=0.9, threshold=0.5)
        finally:
            self.running -= 1


def claims(*ids: str) -> list[Claim]:
    return [Claim(claim_id=i, text=f"fact {i}") for i in ids]


async def test_the_executor_checks_what_the_sink_lacks_once_each_within_its_slots():
    sink = ListSink(held={"a": None, "b": "an earlier error"})
    system = CountingSystem(fails={"e"})
    ran = await Executor(2).run(system, claims("a", "b", "c", "d", "c", "e", "f"), sink)
    assert ran == 4 and sorted(o.key for o in sink.outcomes) == ["c", "d", "e", "f"]  # held ones skipped, c once
    assert system.most <= 2
    broken = next(o for o in sink.outcomes if o.key == "e")
    assert broken.result is None and broken.failed  # kept, not raised; a system of one's own named as such
    assert broken.error == "your system counting (tests.unit.test_executor.CountingSystem) failed: RuntimeError: broke"
    assert [event["item"]["action_name"] for event in sink.steps["c"]] == ["search"]  # steps heard per item
    again = await Executor(2).run(system, claims("a", "b", "c"), sink, retry_errors=True)
    assert again == 1 and sink.outcomes[-1].key == "b"  # only the held error is checked again


async def test_runs_submitted_to_one_executor_share_its_slots():
    executor, system = Executor(3), CountingSystem()
    first, second = ListSink(), ListSink()
    await asyncio.gather(executor.run(system, claims(*"abcdef"), first), executor.run(system, claims(*"ghijkl"), second))
    assert len(first.outcomes) == len(second.outcomes) == 6 and system.most <= 3


def test_todo_keeps_order_and_each_key_once():
    records = claims("x", "y", "x", "z")
    assert [r.claim_id for r in todo(records, {"y": None}, key=lambda r: r.claim_id)] == ["x", "z"]
    with pytest.raises(Exception, match="at least 1"):
        Executor(0)
