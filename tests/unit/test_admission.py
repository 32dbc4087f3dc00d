"""What may enter the domain as a score: the verifier's tagged number read only when it lies within
a hair of [0, 1] (-1, -0.5, -.9, 0x1 and a Unicode minus are unreadable, not 0), and an assessment
whose score is not a finite number of its kind's range is a failed fact, its oversized texts cut."""

from __future__ import annotations

import math

import pytest

from claire.domain import Assessment, Evidence, TraceItem, admit, impossible_score, recorded_outcome
from claire.files import strict_json
from claire.llm.answers import tagged_score, to_score


@pytest.mark.parametrize("raw", ["-1", "-0.5", "-.9", "0x1", "\u22120.7", "1.2", "nan", "inf", "-5%", "-3/10"])
def test_impossible_scores_are_unreadable_not_zero(raw):
    assert to_score(raw) is None
    assert tagged_score(f"<inconsistency_score>{raw}</inconsistency_score>", "inconsistency_score") is None


@pytest.mark.parametrize("raw, value", [("0.7", 0.7), ("70%", 0.7), ("7/10", 0.7), ("-0.0000001", 0.0),
                                        ("1.0000001", 1.0), ("+0.3", 0.3), ("score: 0.8.", 0.8)])
def test_scores_within_a_hair_are_read(raw, value):
    assert to_score(raw) == pytest.approx(value)


def assessment(score, kind="probability") -> Assessment:
    answer = Assessment(claim_id="c", system="s", claim_text="t", score=0.5, threshold=0.5, score_kind=kind)
    answer.score = score
    answer.verdict = "consistent"
    return answer


@pytest.mark.parametrize("score", [math.nan, math.inf, -3.0, 7.0, "high", True])
def test_an_impossible_score_is_a_failed_fact(score):
    admitted = admit(assessment(score), system="your system x")
    assert admitted.score is None and admitted.verdict is None and recorded_outcome(admitted) == "failed"
    assert admitted.error.startswith("your system x gave a score")


def test_possible_scores_pass_and_counts_may_exceed_one():
    assert admit(assessment(0.9)).error is None
    assert admit(assessment(3, kind="count")).score == 3
    assert impossible_score(-1, "count") == "a negative count (-1)"
    assert impossible_score(None) is None


def test_oversized_answers_are_cut_and_marked():
    answer = assessment(0.2)
    answer.reasoning = "r" * 50_000
    answer.evidence = [Evidence(n=i, id=f"b{i}", content="c" * 20_000) for i in range(1, 700)]
    answer.trace = [TraceItem(action_name="search", action_argument="q", action_output="o" * 20_000)]
    admitted = admit(answer, max_chars=10_000, max_items=500)
    assert len(admitted.reasoning) < 10_100 and admitted.reasoning.endswith("40,000 more characters]")
    assert len(admitted.evidence) == 500 and all(len(e.content) < 10_100 for e in admitted.evidence)
    assert len(admitted.trace[0].action_output) < 10_100
    assert "reasoning" in admitted.details["cut"] and "evidence (199 items)" in admitted.details["cut"]


def test_json_claire_writes_is_strict():
    assert strict_json({"score": math.nan, "list": [math.inf, 1.5]}) == '{"score": null, "list": [null, 1.5]}'
