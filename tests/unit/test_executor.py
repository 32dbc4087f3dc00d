"""The domain's verdict rule and passage views, and the one executor: resumable, idempotent work
items into a sink, bounded concurrency shared by every run, steps heard per item, failures kept."""

from __future__ import annotations

import asyncio
import copy

import numpy as np
import pytest
from pydantic import ValidationError

from claire.agent.system import report_step
from claire.domain import Assessment, Block, Claim, Evidence, Passage, decide, flags, titled_passage
from claire.evals.executor import Executor, Outcome, todo
from claire.llm.usage import track_usage


# -- the verdict rule -----------------------------------------------------------------------------
def test_a_probability_flags_above_the_threshold_and_a_count_from_it():
    assert decide(0.5, 0.5, "probability") == "consistent" and decide(0.51, 0.5, "probability") == "inconsistent"
    assert decide(1.0, 1, "count") == "inconsistent" and decide(0.0, 1, "count") == "consistent"
    assert decide(None, 0.5) is None
    assert flags(np.array([0.4, 0.5, 0.6]), 0.5).tolist() == [False, False, True]
    assert flags(np.array([0, 1, 2]), 1, "count").tolist() == [False, True, True]
    counted = Assessment(claim_id="c", system="any", claim_text="t", score=1.0, score_kind="count", threshold=1)
    counted.decide()
    assert counted.verdict == "inconsistent"  # the kind decides, not the system's name


def test_one_passage_model_with_thin_views():
    block = Block(id="b1", document_title="Paris", content="Text.", block_type="table")
    evidence = Evidence.from_hit(type("Hit", (), {"block": block, "score": 0.7})(), 3)
    assert isinstance(block, Passage) and isinstance(evidence, Passage)
    assert evidence.block_id == evidence.id == "b1" and evidence.n == 3 and evidence.score == 0.7
    assert Evidence(n=1, block_id="x", document_title="T").id == "x"  # the name traces and old runs use
    assert evidence.model_dump()["block_id"] == "b1"
    with pytest.raises(ValidationError):
        Block(id=" ", document_title="Paris", content="Text.")
    with pytest.raises(ValueError, match="content must not be empty"):
        titled_passage(Passage(document_title="Paris"))
    assert copy.deepcopy(evidence) is evidence  # frozen: LangGraph's copy of a tool's update is free


def test_usage_scopes_hear_only_model_calls():
    from langchain_core.callbacks import CallbackManager
    from claire.llm.usage import UsageCallback

    handler = UsageCallback()
    assert not handler.ignore_llm  # the one event it reads
    assert handler.ignore_chain and handler.ignore_agent and handler.ignore_retriever  # graph steps, tools
    manager = CallbackManager.configure(inheritable_callbacks=[handler])
    with track_usage() as usage:
        manager.on_chain_start({}, {"input": 1})  # skipped, not an error
    assert usage.calls == 0


# -- the executor ---------------------------------------------------------------------------------
class ListSink:
    """Outcomes in a list; ``held`` are keys it already holds (with their error)."""

    def __init__(self, held: dict[str, str | None] | None = None):
        self.held = dict(held or {})
        self.outcomes: list[Outcome] = []
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
    assert broken.result is None and broken.error == "RuntimeError: broke" and broken.failed  # kept, not raised
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
