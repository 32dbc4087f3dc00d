"""Rate estimation in process: the statistics (exact figures) and the decisions file (index
sampling and `claire estimate` over a real index are in tests/integration/test_estimation.py)."""

from __future__ import annotations

import json
import math

import pytest

from claire.errors import ConfigError, DatasetError
from claire.studies.rate_statistics import cochran_sample_size, estimate_rate, extrapolate, z_value
from claire.studies.reviews import Decision, append_decision, load_decisions, read_decisions


# -- statistics ---------------------------------------------------------------------------
def test_cochran_sample_size_for_the_papers_settings_is_664():
    assert cochran_sample_size(confidence=0.99, margin=0.05, p=0.5) == 664
    assert cochran_sample_size(confidence=0.95, margin=0.05, p=0.5) == 385  # the textbook figure
    assert cochran_sample_size(confidence=0.99, margin=0.05, p=0.1) == 239  # 2.5758^2 * 0.09 / 0.0025 = 238.9


def test_finite_population_correction():
    # n0 = 663.49; n = n0 / (1 + (n0 - 1) / N)
    assert cochran_sample_size(population=10_000) == 623  # 663.49 / 1.066249 = 622.27
    assert cochran_sample_size(population=1_000) == 400  # 663.49 / 1.66249 = 399.09, rounded up
    assert cochran_sample_size(population=100) == 88  # 663.49 / 7.6249 = 87.02, rounded up
    assert cochran_sample_size(population=10**12) == 664  # no correction for a huge corpus


def test_23_of_700_at_99_percent_is_the_papers_figure():
    rate = estimate_rate(23, 700, confidence=0.99)
    assert rate.paper_form() == "3.3% ± 1.7% [1.6%, 5.0%]"
    assert rate.rate == pytest.approx(0.032857, abs=1e-6)
    assert rate.margin == pytest.approx(2.5758293 * math.sqrt((23 / 700) * (677 / 700) / 700), rel=1e-6)
    assert (rate.low, rate.high) == pytest.approx((0.015502, 0.050212), abs=1e-6)


def test_wilson_interval_matches_a_hand_computation():
    # By hand, 23 of 700 at 99% (z = 2.575829, z^2 = 6.634897): p = 0.0328571, z^2/n = 0.00947842,
    # centre = (p + z^2/2n) / (1 + z^2/n) = 0.0375964 / 1.00947842 = 0.0372434,
    # half = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2) = 2.551643 * sqrt(4.53970e-5 + 3.3852e-6) = 0.0178220
    rate = estimate_rate(23, 700, confidence=0.99)
    assert rate.wilson_low == pytest.approx(0.0194214, abs=2e-6)
    assert rate.wilson_high == pytest.approx(0.0550654, abs=2e-6)
    assert rate.wilson_form() == "[1.9%, 5.5%]"
    # Wilson stays inside [0, 1] where the normal approximation collapses
    zero = estimate_rate(0, 50, confidence=0.95)
    assert zero.margin == 0 and zero.low == zero.high == 0
    assert zero.wilson_low == pytest.approx(0.0, abs=1e-12)
    assert zero.wilson_high == pytest.approx(1.959964**2 / (50 + 1.959964**2), rel=1e-5)  # 0.0713


def test_fpc_narrows_the_margin_and_bad_inputs_are_clear_errors():
    plain, corrected = estimate_rate(23, 700), estimate_rate(23, 700, population=1400)
    assert corrected.margin == pytest.approx(plain.margin * math.sqrt(700 / 1399))
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    for call in (lambda: estimate_rate(5, 0), lambda: estimate_rate(8, 7), lambda: estimate_rate(1, 10, confidence=99),
                 lambda: cochran_sample_size(margin=0), lambda: cochran_sample_size(p=1.5),
                 lambda: estimate_rate(1, 10, population=5)):
        with pytest.raises(ConfigError):
            call()


def test_extrapolation_multiplies_facts_per_block_by_the_corpus():
    rate = estimate_rate(23, 700)
    result = extrapolate(rate, unit="block", units_sampled=200, facts_found=1000, corpus_units=1_000_000)
    assert result.facts_per_unit == 5 and result.corpus_facts == 5_000_000
    assert result.inconsistent == pytest.approx(5_000_000 * 23 / 700)
    assert result.inconsistent_low == pytest.approx(5_000_000 * rate.wilson_low)
    # the paper's own form: the normal-approximation interval (3.3% ± 1.7% of the facts)
    assert result.normal_low == pytest.approx(5_000_000 * rate.low) and result.normal_high == pytest.approx(5_000_000 * rate.high)
    assert result.normal_low < result.inconsistent < result.normal_high


# -- decisions ----------------------------------------------------------------------------
def test_decisions_last_line_wins_and_facts_match_by_id_or_text(tmp_path):
    append_decision(tmp_path, Decision(claim_id="fact-1", decision="accept"))
    append_decision(tmp_path, Decision(claim_id="fact-1", decision="reject", comment="changed my mind"))
    append_decision(tmp_path, Decision(fact="The  Eiffel Tower was completed in 1890.", decision="accept"))
    decisions = load_decisions(tmp_path)
    assert decisions.get("fact-1").decision == "reject" and decisions.get("fact-1").comment == "changed my mind"
    assert decisions.get("fact-9", "the eiffel tower was completed in 1890.").decision == "accept"
    assert decisions.get("fact-9", "something else") is None
    lines = (tmp_path / "reviews.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["decided_at"]


def test_malformed_decisions_name_the_line_and_a_torn_last_line_is_ignored(tmp_path):
    path = tmp_path / "web.jsonl"
    path.write_text('{"claim_id": "a", "decision": "accept"}\n{"claim_id": "b", "decision": "maybe"}\n')
    with pytest.raises(DatasetError, match=r"web.jsonl:2: field 'decision'"):
        read_decisions(path)
    path.write_text('{"decision": "accept"}\n')
    with pytest.raises(DatasetError, match=r"web.jsonl:1: .*claim_id or fact"):
        read_decisions(path)
    path.write_text('{"claim_id": "a", "decision": "accept"}\nnot json\n{"claim_id": "b"}\n')
    with pytest.raises(DatasetError, match=r"web.jsonl:2: invalid JSON"):
        read_decisions(path)
    path.write_text('{"claim_id": "a", "decision": "accept"}\n{"claim_id": "b", "deci')
    assert [d.claim_id for d in read_decisions(path)] == ["a"]
    with pytest.raises(DatasetError, match="not found"):
        read_decisions(tmp_path / "missing.jsonl")


def test_appending_after_a_torn_line_cuts_it_away(tmp_path):
    path = tmp_path / "reviews.jsonl"
    path.write_text('{"claim_id": "a", "decision": "accept"}\n{"claim_id": "b", "dec')
    append_decision(tmp_path, Decision(claim_id="c", decision="reject"))
    assert [d.claim_id for d in read_decisions(path)] == ["a", "c"]
    assert len(path.read_text().splitlines()) == 2
