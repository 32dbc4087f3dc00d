"""Metrics against hand-computed values: ties, errors, one-class runs, thresholds, the bootstrap."""

from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from claire.errors import ConfigError
from claire.evals.thresholds import default_threshold
from claire.tasks.wikicollide.scoring import best_f1_threshold, compute_metrics, rank_auroc, roc_points


def pred(claim_id: str, label: str, score: float | None, *, kind: str | None = None, error: str | None = None,
         tokens: int = 0, cost: float | None = None) -> dict:
    return {
        "claim_id": claim_id, "system": "claire", "label": label, "score": score, "error": error,
        "inconsistency_type": kind, "latency_s": 1.0,
        "usage": {"calls": 1, "cached_calls": 0, "prompt_tokens": tokens, "completion_tokens": 0,
                  "total_tokens": tokens, "cost_usd": cost},
    }


# Inconsistent 0.9, 0.6, 0.4 against consistent 0.6, 0.2, 0.1: of the 9 pairs, 0.9 wins 3, the
# tied 0.6 wins 2 and ties 1 (counts 0.5), 0.4 wins 2 -> AUROC 7.5 / 9.
TIES = [
    pred("a", "inconsistent", 0.9, kind="NamedEntity"),
    pred("b", "inconsistent", 0.6, kind="Numerical"),
    pred("c", "inconsistent", 0.4, kind="NamedEntity"),
    pred("d", "consistent", 0.6),
    pred("e", "consistent", 0.2),
    pred("f", "consistent", 0.1),
]


def test_hand_computed_values_with_ties():
    m = compute_metrics(TIES, threshold=0.5, system="claire")
    assert m["auroc"] == pytest.approx(7.5 / 9)
    # At 0.5: a, b and d are called inconsistent -> TP 2, FP 1, FN 1, TN 2.
    assert m["confusion"] == {"tp": 2, "fp": 1, "tn": 2, "fn": 1}
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["recall_by_type"] == {
        "NamedEntity": {"n": 2, "detected": 1, "recall": 0.5},
        "Numerical": {"n": 1, "detected": 1, "recall": 1.0},
    }
    assert m["counts"] == {"total": 6, "scored": 6, "errors": 0, "unscored": 0, "inconsistent": 3, "consistent": 3}
    assert m["note"] is None and m["covers"] == "6 of 6 claims"


def test_a_score_equal_to_the_threshold_is_consistent_as_in_the_paper():
    # the paper flags scores "above 0.5": at 0.6, the two claims scoring exactly 0.6 are not flagged
    m = compute_metrics(TIES, threshold=0.6, system="claire")
    assert m["confusion"] == {"tp": 1, "fp": 0, "tn": 3, "fn": 2}
    m = compute_metrics(TIES, threshold=0.59, system="claire")
    assert m["confusion"] == {"tp": 2, "fp": 1, "tn": 2, "fn": 1}
    # a REFUTES count flags from the threshold on: one REFUTES passage at threshold 1
    counts = [pred("x", "inconsistent", 1.0), pred("y", "consistent", 0.0)]
    assert compute_metrics(counts, threshold=1, system="nli", score_kind="count")["confusion"] == {"tp": 1, "fp": 0, "tn": 1, "fn": 0}


def test_errors_are_left_out_and_counted_in_the_full_set_figures():
    with_errors = TIES + [pred("g", "inconsistent", None, error="boom"), pred("h", "consistent", None, error="boom")]
    m = compute_metrics(with_errors, threshold=0.5, system="claire")
    assert m["counts"]["scored"] == 6 and m["counts"]["errors"] == 2 and m["auroc"] == pytest.approx(7.5 / 9)
    full = m["full_set"]
    assert full["claims"] == 8  # the errors count as a score of 0 (read as consistent)
    assert full["accuracy"] == pytest.approx(5 / 8) and 0 < full["auroc"] < m["auroc"]
    assert compute_metrics(TIES, threshold=0.5, system="claire")["full_set"] is None  # nothing to add without errors


def test_errors_and_missing_scores_are_left_out_and_counted():
    extra = [
        pred("g", "consistent", 0.95, error="LLMError: timeout", tokens=50, cost=0.01),
        pred("h", "inconsistent", None, tokens=30),
    ]
    m = compute_metrics(TIES + extra, threshold=0.5, system="claire")
    assert m["auroc"] == pytest.approx(7.5 / 9)
    assert m["counts"]["total"] == 8 and m["counts"]["scored"] == 6
    assert m["counts"]["errors"] == 1 and m["counts"]["unscored"] == 1
    assert m["covers"] == "6 of 8 claims (1 error and 1 without a score or gold label left out)"
    assert m["usage"]["total_tokens"] == 80 and m["usage"]["calls"] == 8
    assert m["usage"]["cost_usd"] == pytest.approx(0.01)
    assert m["latency_s"]["sum"] == pytest.approx(8.0)


def test_one_class_has_a_clear_note_instead_of_auroc():
    one_class = [pred("a", "consistent", 0.2), pred("b", "consistent", 0.7)]
    m = compute_metrics(one_class, threshold=0.5, system="claire")
    assert m["auroc"] is None and m["auroc_ci95"] is None
    assert m["note"] == "AUROC needs both labels; this run has only 'consistent'"
    assert m["accuracy"] == pytest.approx(0.5)
    assert roc_points(one_class) is None


def test_no_scored_predictions():
    m = compute_metrics([pred("a", "consistent", None, error="boom")], threshold=0.5, system="claire")
    assert m["auroc"] is None and m["accuracy"] is None and m["counts"]["errors"] == 1
    assert "no scored predictions" in m["note"]
    assert m["usage"]["cost_usd"] is None


def test_nli_counts_refutes_against_a_count_threshold():
    counts = [pred("a", "inconsistent", 3), pred("b", "inconsistent", 0), pred("c", "consistent", 1),
              pred("d", "consistent", 0), pred("e", "inconsistent", 1)]
    m = compute_metrics(counts, threshold=default_threshold("nli", None), system="nli", score_kind="count")
    assert m["threshold"] == 1.0
    assert m["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 1}
    # Pairs (inconsistent, consistent): 3 beats both; 0 loses to 1 and ties 0; 1 beats 0, ties 1.
    assert m["auroc"] == pytest.approx((2 + 0.5 + 1.5) / 6)


def test_default_thresholds_follow_the_config():
    assert default_threshold("claire", None) == 0.5
    assert default_threshold("rav", {"agent": {"threshold": 0.3}}) == 0.3
    assert default_threshold("nli", {"baselines": {"nli_threshold": 2}, "agent": {"threshold": 0.3}}) == 2.0


def test_best_f1_threshold():
    # F1 flagging from 0.1 up: 3/(6+3)*2 = .667; from 0.2: .75; from 0.4: 6/7 = .857; from 0.6: .667;
    # 0.9 only: .5. Scores flag above the threshold, so it lies halfway below 0.4: 0.3.
    assert best_f1_threshold(TIES) == pytest.approx(0.3)
    assert compute_metrics(TIES, threshold=best_f1_threshold(TIES), system="claire")["f1"] == pytest.approx(6 / 7)
    # F1 is 2/3 both flagging everything (from 0.2) and 0.9 alone; the lower threshold is taken,
    # half of the lowest score.
    tied = [pred("a", "inconsistent", 0.9), pred("b", "inconsistent", 0.2),
            pred("c", "consistent", 0.5), pred("d", "consistent", 0.4)]
    assert best_f1_threshold(tied) == pytest.approx(0.1)
    # REFUTES counts flag from the threshold on, so the threshold is a count seen
    counts = [pred("a", "inconsistent", 3), pred("b", "inconsistent", 2), pred("c", "consistent", 1), pred("d", "consistent", 0)]
    assert best_f1_threshold(counts, "count") == 2
    with pytest.raises(ConfigError, match="no scored 'inconsistent' claims"):
        best_f1_threshold([pred("a", "consistent", 0.4)])


def test_bootstrap_interval_is_fixed_and_order_free():
    rng = random.Random(3)
    many = [pred(f"c{i:03d}", "inconsistent" if i % 3 else "consistent", round(rng.random(), 2)) for i in range(90)]
    first = compute_metrics(many, threshold=0.5, system="claire")
    shuffled = many[:]
    rng.shuffle(shuffled)
    second = compute_metrics(shuffled, threshold=0.5, system="claire")
    low, high = first["auroc_ci95"]
    assert low < first["auroc"] < high and high - low < 0.5
    assert second["auroc_ci95"] == first["auroc_ci95"]


def test_rank_auroc_matches_scikit_learn():
    rng = np.random.default_rng(5)
    gold = rng.integers(0, 2, (20, 40))
    gold[:, :2] = [0, 1]  # both classes in every row
    scores = rng.integers(0, 6, (20, 40)) / 5  # many ties
    expected = [roc_auc_score(g, s) for g, s in zip(gold, scores)]
    assert rank_auroc(gold, scores) == pytest.approx(expected)


def test_calibration_bins_and_expected_calibration_error(tmp_path):
    # bins (10 wide): 0.9 -> [0.9, 1.0] 1 claim, 1 inconsistent; 0.6 x2 -> [0.6, 0.7) 1 of 2;
    # 0.4 -> [0.4, 0.5) 1 of 1; 0.2 and 0.1 -> one claim each, none inconsistent.
    found = compute_metrics(TIES, threshold=0.5)["calibration"]
    rows = {round(row["low"], 1): row for row in found["bins"]}
    assert sorted(rows) == [0.1, 0.2, 0.4, 0.6, 0.9]
    assert rows[0.6]["count"] == 2 and rows[0.6]["positive_rate"] == 0.5 and rows[0.6]["mean_score"] == pytest.approx(0.6)
    gaps = {0.9: 0.1, 0.6: 0.1, 0.4: 0.6, 0.2: 0.2, 0.1: 0.1}
    expected = sum(rows[b]["count"] / 6 * gap for b, gap in gaps.items())
    assert found["ece"] == pytest.approx(expected)
    assert compute_metrics([pred("x", "inconsistent", 1.0), pred("y", "consistent", 0.0)], threshold=0.5)["calibration"]["ece"] == 0
    nli = compute_metrics([pred("x", "inconsistent", 3), pred("y", "consistent", 0)], threshold=1)
    assert nli["calibration"] is None  # REFUTES counts are not probabilities

    from claire.tasks.wikicollide.report import render_report, write_outputs

    metrics = compute_metrics(TIES, threshold=0.5, system="claire")
    assert "## Calibration" in render_report(metrics, TIES) and "| 0.6–0.7 | 2 | 0.60 | 0.50 |" in render_report(metrics, TIES)
    write_outputs(tmp_path, metrics, TIES)
    assert (tmp_path / "calibration.png").stat().st_size > 1000 and (tmp_path / "roc.png").is_file()


def test_isotonic_and_platt_calibration_from_a_validation_run_lower_the_error(tmp_path):
    from claire.tasks.calibration import Calibrator, load_calibration
    from claire.tasks.wikicollide.scoring import recalibrate

    rng = random.Random(7)
    def run(n):  # an over-confident system: it says 0.9 to facts that are inconsistent only half the time
        return [pred(f"c{i}", "inconsistent" if rng.random() < (0.5 if i % 2 else 0.1) else "consistent",
                     0.9 if i % 2 else 0.4) for i in range(n)]
    validation, test = run(400), run(400)
    calibrated, calibrator = recalibrate(test, validation, source="val-run")
    assert calibrated["method"] == "isotonic" and calibrated["fitted_on"] == 400
    assert calibrated["ece_before"] > 0.25 and calibrated["ece"] < 0.08
    assert 0.4 < calibrator.probability(0.9) < 0.6 and calibrator.probability(0.4) < 0.2  # about the true rates
    platt, logistic = recalibrate(test, validation, source="val-run", method="platt")
    assert platt["method"] == "platt" and platt["ece"] < 0.08 and logistic.probability(0.9) > logistic.probability(0.4)
    calibrator.save(tmp_path / "calibrator.json")  # saved and read back, as agent.calibration reads it
    assert load_calibration(tmp_path).probability(0.9) == pytest.approx(calibrator.probability(0.9))
    assert Calibrator.load(tmp_path / "calibrator.json").method == "isotonic"
    with pytest.raises(ConfigError, match="unknown calibration method"):
        recalibrate(test, validation, source="val-run", method="magic")
    with pytest.raises(ConfigError, match="both labels"):
        recalibrate(test, [pred("x", "consistent", 0.3)], source="one-label")
    with pytest.raises(ConfigError, match="not in \\[0, 1\\]"):
        recalibrate([pred("x", "inconsistent", 3), pred("y", "consistent", 0)], validation, source="val-run")


def test_calibrate_from_needs_a_run_directory(tmp_path):
    from claire.evals.runner import check_source_run

    with pytest.raises(ConfigError, match="--calibrate-from .* not a run directory"):
        check_source_run(tmp_path, "--calibrate-from")


def test_the_report_names_the_setup_and_each_difference_from_the_paper():
    from claire.config import load_config
    from functools import partial

    from claire.agent.registry import reads_setting
    from claire.tasks.wikicollide.report import describe_setup, render_report

    paper = load_config(None, {}).public_dict()
    setup = describe_setup({**paper, "index_embedder": "Alibaba-NLP/gte-multilingual-base"}, partial(reads_setting, "claire"))
    # the paper preset differs only in its prompts' words; each rule's place is in the side-by-side
    assert setup["differences_from_paper"] == [
        "prompts: the project's wording of the paper's prompts (Figs 14-22), with the paper's worked cases, scores, "
        "rules and procedure; each rule's place, and each difference, is in the side-by-side table under *The paper, "
        "rule by rule*"]
    assert [row["id"] for row in setup["paper_rules"]][:3] == ["X1", "X2", "X3"]
    assert setup["paper_rule_counts"]["follows"] + setup["paper_rule_counts"]["listed"] == 48
    assert setup["retrieval_mode"] == "dense"
    assert "finish_action" not in " ".join(describe_setup(paper, partial(reads_setting, "rav"))["differences_from_paper"])  # not an agent
    practical = load_config(None, {"preset": "practical", "llm.model": "qwen"}).public_dict()
    found = " ".join(describe_setup({**practical, "index_embedder": "all-MiniLM-L6-v2"}, partial(reads_setting, "claire"))["differences_from_paper"])
    for expected in ("embedder all-MiniLM-L6-v2", "llm.model", "retrieval.mode", "agent.stop_on_report = false",
                     "agent.snippet_chars", "agent.finish_action = true", "agent.thoughts = false", "the project's wording",
                     'prompts.variants.verifier = "lenient"', 'prompts.variants.controller = "practical"',
                     'prompts.variants.explain = "practical"', 'prompts.variants.clarify_entity = "practical"',
                     'prompts.variants.fact_extraction = "practical"'):
        assert expected in found, expected
    ablation = load_config(None, {"agent.tools": ["search"], "prompts.set": "/my/prompts"}).public_dict()
    found = " ".join(describe_setup(ablation, partial(reads_setting, "claire"))["differences_from_paper"])
    assert 'agent.tools = ["search", "report_inconsistency"]' in found and 'prompts.set = "/my/prompts"' in found
    metrics = compute_metrics(TIES, threshold=0.5, system="claire")
    metrics["setup"] = describe_setup(practical, partial(reads_setting, "claire"))
    report = render_report(metrics, TIES)
    assert "**Differs from the paper's method in:**" in report and "a score above it means *inconsistent*" in report
    assert "agent.finish_action = true" in report and "the project's wording of the paper's prompts" in report
    assert "**The paper, rule by rule**" in report and "<reviewer_feedback>" in report
    assert "| A3 | a thought about what was gathered before each action (ReAct) | `prompts/controller.j2:" in report


def test_a_calibrator_file_with_malformed_points_is_refused_when_read(tmp_path):
    import json

    from claire.tasks.calibration import Calibrator

    for points in ([[1]], [["x", 0.5]], [[0.5, float("nan")]]):
        path = tmp_path / "calibrator.json"
        path.write_text(json.dumps({"method": "isotonic", "fitted_on": 3, "source": "s", "points": points}))
        with pytest.raises(ConfigError, match="calibrator"):
            Calibrator.load(path)


def test_a_calibrated_baseline_has_no_resume_and_takes_no_thread(tmp_path):
    import asyncio

    from claire.agent.system import CalibratedSystem
    from claire.domain import Assessment
    from claire.tasks.calibration import Calibrator

    class Baseline:  # a system without interactive checks, as rav and nli are
        name = "rav"

        async def assess(self, claim):
            return Assessment(claim_id="c", claim_text="t", system="rav", score=0.9, threshold=0.5)

    wrapped = CalibratedSystem(Baseline(), Calibrator("isotonic", 2, "s", points=[(0.0, 0.1), (1.0, 0.7)]))
    assert not hasattr(wrapped, "resume")
    assert asyncio.run(wrapped.assess(object())).probability == pytest.approx(0.64)


def test_what_cannot_be_calibrated_is_said_before_a_run(tmp_path):
    from claire.evals.runner import calibration_run
    from claire.tasks.registry import get_task

    wikicollide = get_task("wikicollide")
    with pytest.raises(ConfigError, match="unknown calibration method 'platts'"):
        calibration_run(wikicollide, "claire", "probability", tmp_path, "platts")
    with pytest.raises(ConfigError, match=r"counts \(of REFUTES passages\)"):
        calibration_run(wikicollide, "nli", "count", tmp_path, "isotonic")
    with pytest.raises(ConfigError, match="not the citations task"):
        calibration_run(get_task("citations"), "claire", "probability", tmp_path, "isotonic")
