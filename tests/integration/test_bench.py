"""The benchmarks run end to end with tiny parameters (their figures are checked for shape,
not speed: timing targets belong to real benchmark runs, not to CI)."""

from __future__ import annotations

import pytest
from rich.console import Console

from claire.bench.eval import CALLS_PER_CLAIM, run_eval_bench
from claire.bench.llm import WARMUP, run_llm_bench


def test_eval_bench_counts_calls_and_the_warm_cache_makes_none():
    console = Console(record=True, width=160)
    result = run_eval_bench(claims=4, latency=0.01, concurrencies=(1, 4), repeat=2, console=console)
    assert [run["concurrency"] for run in result["runs"]] == [1, 4]
    assert [run["runs"] for run in result["runs"]] == [1, 2]  # concurrency 1 runs once
    for run in result["runs"]:
        assert run["server_calls"] == 4 * CALLS_PER_CLAIM and run["errors"] == 0  # every repeat starts cold
        assert run["claims_per_min"] > 0 and 0 < run["fraction_of_ideal"] <= 1.0
        assert run["fraction_of_ideal"] in run["fractions"]
    warm = result["warm_cache"]
    assert warm["server_calls"] == 0 and warm["cached_calls"] == 4 * CALLS_PER_CLAIM and warm["errors"] == 0
    assert "4, warm cache" in console.export_text()


def test_llm_bench_reports_overhead_scaling_and_cache_hits():
    console = Console(record=True, width=160)
    result = run_llm_bench(calls=20, console=console)
    overhead, scaling, cache = result["overhead"], result["scaling"], result["cache_hit"]
    assert overhead["client_p50_ms"] > 0 and overhead["raw_p50_ms"] > 0
    assert overhead["server_calls"] == 3 * (20 + WARMUP)  # raw, bare-model and client calls alike went over HTTP
    assert overhead["library_p50_ms"] + overhead["ours_p50_ms"] == pytest.approx(overhead["overhead_p50_ms"])
    assert overhead["client_p95_ms"] >= overhead["client_p50_ms"] and overhead["raw_p95_ms"] >= overhead["raw_p50_ms"]
    assert scaling["calls_c32"] == 20 and scaling["calls_per_s_c1"] > 0 and scaling["speedup"] > 1
    assert cache["server_calls"] == 0 and cache["p50_ms"] > 0
    assert "overhead p50 / p95" in console.export_text()


def test_prompt_bench_compares_prompt_sizes_with_and_without_the_budget():
    from pathlib import Path

    from claire.bench.prompts import run_prompt_bench
    from claire.indexes.corpus import demo_corpus_path

    console = Console(record=True, width=160)
    dataset = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
    result = run_prompt_bench(dataset, demo_corpus_path(), window=2048, max_steps=3, docs_per_query=15, console=console)
    before, after = result["no budget"], result["budget 2048"]
    assert before["largest_prompt"] > 2048 and before["over_window"] > 0  # a 2k model would have refused some
    assert after["largest_prompt"] <= 2048 and after["over_window"] == after["rejected"] == 0
    assert after["mean_per_claim"] < before["mean_per_claim"]
    printed = console.export_text()
    assert "prompts over 2048" in printed
    # the prompt-cache run: every template CLAIRE and NLI use, each counted in 128-token steps from 1,024
    shares = result["prefix_cache"]
    assert {"controller", "rankgpt", "clarify_entity", "explain", "verifier", "report_consistent", "report_inconsistent",
            "nli"} <= set(shares)
    assert shares["controller"]["share"] > 0  # each step's request extends the one before it
    assert all(row["cached_tokens"] % 128 == 0 and row["cached_tokens"] <= row["prompt_tokens"] for row in shares.values())
    assert shares["all"]["requests"] == sum(row["requests"] for name, row in shares.items() if name != "all")
    assert "repeating an earlier request's prefix" in printed


def test_watch_bench_checks_every_edit_of_the_burst_and_times_each():
    from claire.bench.watch import run_watch_bench

    console = Console(record=True, width=160)
    [row] = run_watch_bench(edits=4, latency=0.01, in_flight=(2,), console=console)
    assert (row["checked"], row["failed"], row["flagged"]) == (4, 0, 2)  # every other edit plants the 1890 date
    assert 0 < row["p50_s"] <= row["p95_s"] <= row["wall_s"] and "Lag p50" in console.export_text()
    assert row["peak_rss_mb"] > 0 and row["edits_per_s"] > 0


def test_watch_bench_at_a_live_pace_measures_lag_from_when_each_edit_was_made():
    """Edits arriving at a rate: each edit's lag counts from the moment the stream made it, and
    edits/s is the rate checked edits came out."""
    from claire.bench.watch import run_watch_bench

    [row] = run_watch_bench(edits=6, latency=0.01, in_flight=(4,), rate=5.0, console=Console(record=True, width=160))
    assert row["checked"] == 6 and row["failed"] == 0
    assert 0 < row["first_third_p50_s"] and 0 < row["last_third_p50_s"] and row["p50_s"] <= row["p95_s"]
    assert 0 < row["edits_per_s"] < 50


def test_cascade_bench_sends_only_part_of_the_facts_to_claire_and_spends_less():
    from claire.bench.cascade import run_cascade_bench

    figures = run_cascade_bench(claims=6, latency=0.0, cut=0.3, console=Console(record=True, width=160))
    claire, cascade = figures["claire"], figures["cascade"]
    assert claire["errors"] == cascade["errors"] == 0 and claire["to_claire"] == 1.0
    assert 0 < cascade["to_claire"] < 1 and cascade["calls"] < claire["calls"]


def test_resolve_bench_counts_calls_per_resolve_on_the_shipped_cases():
    from claire.bench.resolve import run_resolve_bench

    figures = run_resolve_bench(latency=0.0, console=Console(record=True, width=160))
    assert figures["cases"] >= 40 and figures["errors"] == 0 and figures["accuracy"] == 1.0
    assert 2 <= figures["calls"] <= 4  # a verifier call per readable source, and the explanation
