"""Token usage as the endpoint reports it: impossible counts dropped or clamped, and counted."""

from __future__ import annotations

import json
import pytest


# -- usage is the endpoint's advice ----------------------------------------------------------------

@pytest.mark.parametrize("value", [-5, "abc", float("inf"), float("nan"), 1e308, True, "12abc", 2.5])
def test_an_impossible_token_count_is_not_believed(value):
    from claire.usage import token_count

    assert token_count(value) is None


def test_a_believable_token_count_is_read():
    from claire.usage import token_count

    assert token_count(12) == 12 and token_count("12") == 12 and token_count(12.0) == 12 and token_count(0) == 0


def test_usage_metadata_drops_what_is_impossible_and_keeps_the_rest():
    from claire.llm.local import usage_metadata
    from claire.usage import track_usage

    with track_usage() as tally:
        metadata = usage_metadata({"prompt_tokens": 100, "completion_tokens": float("inf"),
                                   "prompt_tokens_details": {"cached_tokens": 5000}})
    assert metadata["input_tokens"] == 100 and metadata["output_tokens"] == 0
    assert metadata["input_token_details"]["cache_read"] == 100  # no more than was sent
    assert tally.events == {"usage_fixed": 1}


def test_a_run_with_impossible_usage_reports_believable_totals_and_says_so(tmp_path):
    from claire.evals.reporting import compare_runs
    from claire.tasks.measures import usage_totals
    from claire.tasks.wikicollide.report import render_report, write_outputs
    from claire.tasks.wikicollide.scoring import compute_metrics

    predictions = [
        {"claim_id": "a", "score": 0.9, "label": "inconsistent", "error": None, "latency_s": 1.0,
         "usage": {"calls": 2, "prompt_tokens": -20_000_000, "completion_tokens": 10, "cost_usd": -200.0}},
        {"claim_id": "b", "score": 0.1, "label": "consistent", "error": None, "latency_s": 1.0,
         "usage": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 10, "cache_read_tokens": 5000,
                   "cost_usd": float("nan")}},
        {"claim_id": "c", "score": 0.2, "label": "consistent", "error": None, "latency_s": 1.0,
         "usage": {"calls": 2, "prompt_tokens": 1e308, "completion_tokens": "abc", "cost_usd": 0.01}},
    ]
    totals = usage_totals(predictions)
    assert totals["prompt_tokens"] == 100 and totals["completion_tokens"] == 20 and totals["cost_usd"] == 0.01
    assert totals["cache_read_tokens"] == 100 and totals["unbelievable"] == 3
    metrics = compute_metrics(predictions, threshold=0.5, system="claire")
    report = render_report(metrics, predictions)
    assert "Cost: $0.0100" in report and "-" not in report.split("Cost: ")[1].split()[0]
    assert "3 claim(s) recorded impossible token or cost figures" in report and "5000%" not in report
    run = tmp_path / "run"
    run.mkdir()
    write_outputs(run, metrics, predictions)
    (run / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    compare_runs([run])  # an OverflowError on 1e308 tokens before


def test_answers_served_from_the_cache_count_at_what_a_fresh_run_would_pay():
    from claire.evals.reporting import cost_cell, per_claim_costs
    from claire.usage import CallTokens, Usage

    usage = Usage()
    usage.record("gpt-4o", CallTokens(prompt=1000, completion=100), cached=False)
    for _ in range(3):  # the same answer served three times by CLAIRE's cache
        usage.record("gpt-4o", CallTokens(prompt=1000, completion=100), cached=True)
    assert usage.cost_usd == pytest.approx(0.0035) and usage.uncached_cost_usd == pytest.approx(0.014)
    data = {**usage.to_dict(), "uncached_cost_usd": usage.uncached_cost_usd}
    costs = per_claim_costs({"counts": {"total": 1}, "usage": data, "latency_s": {}})
    assert costs["calls"] == 4 and costs["prompt_tokens"] == 4000 and costs["cached_share"] == 0.75
    assert cost_cell(data) == "$0.0140 uncached / $0.0035 paid"
    assert Usage.from_dict(usage.to_dict()).cached_cost_usd == pytest.approx(0.0105)
