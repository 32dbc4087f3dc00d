"""Scoring a run: thresholds and splits that mean nothing are refused, a failed run names its most
common error, half a surrogate pair in a prediction is written, and margins and totals out of
range are validation errors."""

from __future__ import annotations

import json

import pytest

from claire.errors import ConfigError
from claire.evals.runner import RunSummary, config_differences, failure, score_run


def test_scoring_refuses_thresholds_and_splits_that_mean_nothing(tmp_path):
    for bad in (float("nan"), float("inf"), -5.0):
        with pytest.raises(ConfigError, match="--threshold"):
            score_run(tmp_path, threshold=bad)
    with pytest.raises(ConfigError, match="--split must be one of validation, test"):
        score_run(tmp_path, split="bogus")


def test_a_failed_run_names_its_most_common_error_and_a_new_endpoint_may_finish_it(tmp_path):
    summary = RunSummary(out_dir=tmp_path, system="claire", total=3, skipped=0, ran=3, errors=3, wall_time_s=1.0,
                         metrics={}, common_error="LLM call failed: cannot connect to http://127.0.0.1:9/v1")
    assert "cannot connect to http://127.0.0.1:9/v1" in failure(summary, 0.2)
    old = {"llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}
    assert config_differences(old, {"llm": {"model": "m", "base_url": "http://127.0.0.1:8000/v1"}}) == []
    assert config_differences(old, {"llm": {"model": "other", "base_url": "http://127.0.0.1:9/v1"}})


def test_half_a_surrogate_pair_in_a_prediction_is_written_not_fatal():
    from claire.runs.predictions import json_text
    from claire.tasks.records import Prediction

    line = Prediction(claim_id="a", system="rav", reasoning="half \ud800 a pair", trace=[{"output": "\udc00"}])
    written = json.loads(json_text(line))
    assert written["reasoning"] == "half \ufffd a pair" and written["trace"] == [{"output": "\ufffd"}]


def test_margins_and_totals_out_of_range_are_validation_errors_and_metrics_thresholds_fit_the_system(tmp_path):
    from claire.runs.predictions import write_run_config
    from claire.studies.rate_statistics import cochran_sample_size, estimate_rate

    with pytest.raises(ConfigError, match="margin of error must be from"):
        cochran_sample_size(margin=1e-300)
    with pytest.raises(ConfigError, match="the total must be from 1 to"):
        estimate_rate(3, 10**24)
    write_run_config(tmp_path, {"system": "claire", "config": {}})
    (tmp_path / "predictions.jsonl").write_text(json.dumps({"claim_id": "a", "system": "claire", "score": 0.4,
                                                            "label": "consistent"}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--threshold 7 is above 1"):
        score_run(tmp_path, threshold=7)
