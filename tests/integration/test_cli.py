"""The ``claire`` command end to end (in the test's process through its entry point, see
:func:`claire.testing.cli.run_claire`), over a real on-disk index and a local OpenAI-compatible
server: the real boundary end to end, and clear messages for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.cli import run_claire
from claire.testing.doubles import http_responder, installed_package, kind_of


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory, copy_demo_index):
    """A cache folder holding a copy of the session's real demo index."""
    cache = tmp_path_factory.mktemp("claire-cache")
    copy_demo_index(cache / "indexes")
    return cache


@pytest.fixture
def server():
    with MockOpenAIServer(http_responder()) as srv:
        yield srv


def test_check_json_end_to_end(server, demo_cache):
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--section", "Landmarks",
                        "--json", "--model", "test-model", "--base-url", server.base_url, "--no-cache",
                        cache=demo_cache, env={"OPENAI_API_KEY": "sk-e2e-secret-1234567890"})
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"] == "inconsistent" and data["score"] == 0.9
    # the paper's method: a batch check (no review) ends its research at the first report
    assert [t["action_name"] for t in data["trace"]] == ["search", "report_inconsistency", "verifier"]
    titles = {e["document_title"] for e in data["evidence"]}
    assert "Paris" not in titles and "Eiffel Tower" in titles
    assert data["report"]["consistent"] and data["report"]["inconsistent"]
    # controller x2, rankgpt windows, verifier, report x2: each call the server answered is counted once
    assert data["usage"]["calls"] == server.calls >= 6 and data["usage"]["cached_calls"] == 0
    assert "sk-e2e-secret" not in result.stdout + result.stderr
    assert any(r.get("tools") for r in server.requests)  # native tool calling went over the wire


@pytest.mark.parametrize("system, expected_names", [("rav", ["search", "verifier"]), ("nli", ["search"])])
def test_baselines_end_to_end(server, demo_cache, system, expected_names):
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--system", system,
                        "--json", "--base-url", server.base_url, "--no-cache", "--no-rerank", cache=demo_cache)
    data = json.loads(result.stdout)
    assert result.returncode == (1 if data["verdict"] == "inconsistent" else 0), result.stderr
    names = [t["action_name"] for t in data["trace"]]
    assert names[: len(expected_names)] == expected_names
    assert len(data["evidence"]) == 20
    if system == "nli":
        assert names.count("nli") == 20 and data["score"] == data["details"]["counts"]["REFUTES"]
        assert data["verdict"] == ("inconsistent" if data["score"] >= 1 else "consistent")


def test_check_text_action_mode_and_trace_out(server, demo_cache, tmp_path):
    trace = tmp_path / "trace.json"
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--base-url", server.base_url,
                        "--no-cache", "--no-rerank", "--set", "llm.tool_calling=\"text\"", "--trace-out", str(trace),
                        "--set", "agent.finish_action=true",  # the responder ends its text research with finish()
                        cache=demo_cache)
    assert result.returncode == 1, result.stderr
    assert "INCONSISTENT" in result.stdout and "evidence" in result.stdout
    items = json.loads(trace.read_text())
    assert [i["action_name"] for i in items] == ["search", "finish", "verifier"]
    assert not any(r.get("tools") for r in server.requests)


def test_unreachable_endpoint_is_a_clear_error(demo_cache):
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--json", "--base-url", "http://127.0.0.1:9/v1",
                        "--no-cache", "--set", "llm.max_attempts=1", cache=demo_cache)
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert "OPENAI_BASE_URL" in data["error"]
    assert "Traceback" not in result.stderr


def test_missing_api_key_is_a_clear_error(demo_cache):
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", cache=demo_cache)
    assert result.returncode == 2
    assert "set OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr


def test_bad_inputs_are_clear_errors(demo_cache):
    cases = [
        (("check", "   "), "the fact is empty"),
        (("search", "Eiffel", "--index", "nope"), "nope"),
        (("config", "show", "--set", "agent.max_steps=0"), "agent.max_steps"),
        (("check", "x", "--tools", "search,teleport"), "unknown tool"),
    ]
    for args, message in cases:
        result = run_claire(*args, cache=demo_cache, env={"OPENAI_API_KEY": "sk-x"})
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)


def test_search_json_excludes_the_title(demo_cache):
    result = run_claire("search", "Eiffel Tower completion", "--exclude-title", "Eiffel Tower", "-k", "5", "--json", cache=demo_cache)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert len(hits) == 5 and all(h["document_title"] != "Eiffel Tower" for h in hits)


def test_version_and_config_show_masks_secrets(demo_cache):
    assert run_claire("--version", cache=demo_cache).stdout.startswith("claire ")
    result = run_claire("config", "show", "--json", cache=demo_cache, env={"OPENAI_API_KEY": "sk-very-secret-abcdef123456"})
    data = json.loads(result.stdout)
    assert data["llm"]["api_key"] == "****3456" and "very-secret" not in result.stdout


FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"


def test_eval_writes_a_run_dir_and_resumes_for_free(server, demo_cache, tmp_path):
    out = tmp_path / "run"
    args = ("eval", "--index", "demo", "--dataset", str(FIXTURE), "--system", "claire", "--out", str(out), "--ids", "demo_1,demo_2,demo_6,demo_7",
            "--base-url", server.base_url, "--no-rerank", "--concurrency", "2")
    first = run_claire(*args, cache=demo_cache)
    assert first.returncode == 0, first.stderr
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 4
    record = json.loads(lines[0])
    assert {"claim_id", "system", "score", "verdict", "label", "evidence_ids", "usage", "latency_s", "error", "trace"} <= set(record)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["auroc"] is not None and (out / "report.md").exists() and (out / "roc.png").exists()
    config = json.loads((out / "config.json").read_text())
    assert config["system"] == "claire"
    calls = server.calls
    again = run_claire(*args, cache=demo_cache)
    assert again.returncode == 0, again.stderr
    assert server.calls == calls  # every claim was already done: no LLM call
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 4
    recomputed = run_claire("metrics", str(out), cache=demo_cache)
    assert recomputed.returncode == 0 and "AUROC" in recomputed.stdout


def test_eval_rejects_a_malformed_dataset(demo_cache, tmp_path):
    bad = tmp_path / "dev.json"
    bad.write_text(json.dumps([{"claim": {"claim_id": "x"}, "label": "maybe"}]))
    result = run_claire("eval", "--index", "demo", "--dataset", str(bad), "--out", str(tmp_path / "o"), cache=demo_cache, env={"OPENAI_API_KEY": "k"})
    assert result.returncode == 2 and "record 0" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o" / "predictions.jsonl").exists()


def test_scan_flags_the_planted_contradiction(server, demo_cache, tmp_path):
    example = Path(__file__).parents[2] / "docs" / "examples" / "Paris.txt"  # README's example passage
    out = tmp_path / "scan"
    result = run_claire("scan", "--title", "Paris", "--file", str(example), "--out", str(out), "--base-url", server.base_url,
                        "--no-cache", "--set", "retrieval.rerank=false", cache=demo_cache)
    assert result.returncode == 1, result.stderr  # done, and a fact flagged: the exit status every command gives it
    report = (out / "scan.md").read_text()
    assert "2 facts checked; 1 flagged" in report
    assert "## The Eiffel Tower was completed in 1890." in report
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2


def test_scan_of_an_article_missing_from_the_index_says_nothing_is_excluded(server, demo_cache, tmp_path):
    result = run_claire("scan", "--title", "Atlantis", "--text", "The Eiffel Tower was completed in 1890.", "--out", str(tmp_path / "s"),
                        "--base-url", server.base_url, "--no-cache", "--set", "retrieval.rerank=false", cache=demo_cache)
    assert result.returncode == 1, result.stderr
    assert "not in the index" in result.stderr.replace("\n", " ")


def test_extract_prints_facts_and_rejects_empty_text(server, demo_cache):
    result = run_claire("extract", "--title", "Eiffel Tower", "--text", "Some text.", "--json", "--base-url", server.base_url,
                        "--no-cache", cache=demo_cache)
    assert result.returncode == 0, result.stderr
    assert [f["fact"] for f in json.loads(result.stdout)] == ["The Eiffel Tower was completed in 1890.", "The Eiffel Tower is in Paris."]
    empty = run_claire("extract", "--title", "X", "--text", "   ", "--base-url", server.base_url, cache=demo_cache)
    assert empty.returncode == 2 and "text is empty" in empty.stderr


def test_a_system_written_outside_claire_runs_through_check_and_eval(server, demo_cache, tmp_path, monkeypatch):
    """docs/examples/number_check.py, named package.module:Class, is built and run like a built-in
    system: a check with its verdict, and an eval run directory scored like any other.
    The check is a real process that finds the module on PYTHONPATH, as a user's would."""
    examples = Path(__file__).parents[2] / "docs" / "examples"
    env = {"PYTHONPATH": str(examples), "OPENAI_API_KEY": "k"}
    check = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--system",
                       "number_check:NumberCheck", "--no-rerank", "--json", "--base-url", server.base_url, "--no-cache",
                       cache=demo_cache, env=env, process=True)
    monkeypatch.syspath_prepend(str(examples))  # the same folder for the runs in this process
    answer = json.loads(check.stdout)
    assert answer["system"] == "number_check" and check.returncode == (1 if answer["verdict"] == "inconsistent" else 0)
    assert answer["evidence"] and server.calls == 0  # the same index; this system asks no LLM
    out = tmp_path / "run"
    run = run_claire("eval", "--dataset", str(FIXTURE), "--index", "demo", "--system", "number_check:NumberCheck",
                     "--set", "retrieval.rerank=false", "--out", str(out), "--base-url", server.base_url, "--no-cache",
                     cache=demo_cache, env=env)
    assert run.returncode == 0, run.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["system"] == "number_check" and metrics["counts"]["total"] == 10 and metrics["auroc"] is not None
    bad = run_claire("check", "A fact.", "--system", "no_such_module:Thing", cache=demo_cache, env=env)
    assert bad.returncode == 2 and "cannot import no_such_module" in bad.stderr and "Traceback" not in bad.stderr
    # the same system installed by a package of its own, which names it in the claire.systems entry points
    monkeypatch.syspath_prepend(str(installed_package(tmp_path / "site", "claire_numbers", {"numbers": "number_check:NumberCheck"})))
    named = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--system", "numbers",
                       "--no-rerank", "--json", "--base-url", server.base_url, "--no-cache", cache=demo_cache, env=env)
    assert json.loads(named.stdout)["system"] == "number_check" and named.returncode in (0, 1), named.stderr


def test_a_system_that_needs_no_llm_runs_without_a_key_as_the_docs_show(demo_cache, tmp_path, monkeypatch):
    """docs/systems.md's commands, as written: no key, no endpoint, no --no-rerank;
    the run's report lists only differences in settings the system reads."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "docs" / "examples"))
    check = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--system",
                       "number_check:NumberCheck", "--json", cache=demo_cache)
    assert check.returncode in (0, 1), check.stderr
    assert json.loads(check.stdout)["usage"].get("calls", 0) == 0
    out = tmp_path / "run"
    run = run_claire("eval", "--dataset", str(FIXTURE), "--index", "demo", "--system", "number_check:NumberCheck",
                     "--out", str(out), cache=demo_cache)
    assert run.returncode == 0, run.stderr
    report = (out / "report.md").read_text()
    assert "llm.model" not in report and "retrieval.rerank" in report


def test_no_checkable_fact_has_its_own_exit_status(demo_cache, tmp_path):
    """Exit 1 means "flagged" for every command; a text with no checkable fact is 3 for extract and
    scan alike."""
    with MockOpenAIServer(lambda body: {"content": "This text states no checkable fact."}) as empty:
        extract = run_claire("extract", "--title", "X", "--text", "Hello there.", "--base-url", empty.base_url,
                             "--no-cache", cache=demo_cache, env={"OPENAI_API_KEY": "k"})
        scan = run_claire("scan", "--title", "X", "--text", "Hello there.", "--out", str(tmp_path / "s"), "--base-url",
                          empty.base_url, "--no-cache", cache=demo_cache, env={"OPENAI_API_KEY": "k"})
    assert extract.returncode == 3 and "no checkable facts" in extract.stderr
    assert scan.returncode == 3 and "no checkable facts" in scan.stderr and "Traceback" not in scan.stderr


@pytest.mark.parametrize("sweep", sorted((Path(__file__).parents[2] / "evals" / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_sweeps_plan_against_the_real_config(sweep, demo_cache, tmp_path):
    result = run_claire("sweep", str(sweep), "--dataset", str(FIXTURE), "--out", str(tmp_path), "--dry-run", cache=demo_cache)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


@pytest.mark.slow  # one of the slowest end-to-end runs: left out of the quick lane
def test_index_build_from_articles_then_search_it(tmp_path, demo_cache):
    article = tmp_path / "Harbour_Bridge.txt"
    article.write_text("The bridge opened in 1932.\n\n## Design\n\nIt is a steel arch bridge.\n\n| span | value |\n| --- | --- |\n| main | 503 m |\n")
    built = run_claire("index", "build", "--from-article", str(article), "--name", "harbour", "--path", str(tmp_path / "idx"), cache=demo_cache)
    assert built.returncode == 0, built.stderr
    assert "3 blocks from 1 articles" in built.stdout
    found = run_claire("search", "steel arch", "--index", "harbour", "--path", str(tmp_path / "idx"), "--json", cache=demo_cache)
    hits = json.loads(found.stdout)
    assert hits[0]["document_title"] == "Harbour Bridge" and hits[0]["section_title"] == "Design"
    assert any(h["block_type"] == "table" for h in hits)
    listed = run_claire("index", "list", "--path", str(tmp_path / "idx"), cache=demo_cache)
    assert "harbour" in listed.stdout
    again = run_claire("index", "build", "--from-article", str(article), "--name", "harbour", "--path", str(tmp_path / "idx"), cache=demo_cache)
    assert again.returncode == 2 and "--replace" in again.stderr


@pytest.mark.slow  # one of the slowest end-to-end runs: left out of the quick lane
def test_test_split_threshold_flows_into_verdicts_and_survives_rescoring(server, demo_cache, tmp_path):
    dev, test = tmp_path / "dev", tmp_path / "test"
    common_args = ("--system", "rav", "--base-url", server.base_url, "--no-rerank", "--ids", "demo_1,demo_2,demo_6,demo_7")
    assert run_claire("eval", "--index", "demo", "--dataset", str(FIXTURE), "--out", str(dev), *common_args, cache=demo_cache).returncode == 0
    result = run_claire("eval", "--index", "demo", "--dataset", str(FIXTURE), "--out", str(test), "--threshold", "0.05", *common_args, cache=demo_cache)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (test / "predictions.jsonl").read_text().splitlines()]
    assert {r["threshold"] for r in rows} == {0.05} and {r["verdict"] for r in rows} == {"inconsistent"}
    before = json.loads((test / "metrics.json").read_text())
    assert run_claire("metrics", str(test), cache=demo_cache).returncode == 0
    after = json.loads((test / "metrics.json").read_text())
    assert after["threshold"] == before["threshold"] == 0.05
    assert after["calibration"]["bins"] and (test / "calibration.png").is_file()
    calibrated = run_claire("metrics", str(test), "--calibrate-from", str(dev), cache=demo_cache)
    assert calibrated.returncode == 0, calibrated.stderr
    assert json.loads((test / "metrics.json").read_text())["calibrated"]["fitted_on"] == 4
    assert "After isotonic calibration" in (test / "report.md").read_text()


def test_a_run_directory_refuses_to_resume_with_other_settings(server, demo_cache, tmp_path):
    out = tmp_path / "run"
    args = ("eval", "--index", "demo", "--dataset", str(FIXTURE), "--out", str(out), "--system", "rav", "--base-url", server.base_url,
            "--no-rerank", "--limit", "1")
    assert run_claire(*args, cache=demo_cache).returncode == 0
    changed = run_claire(*args, "--model", "another-model", cache=demo_cache)
    assert changed.returncode == 2 and "llm.model" in changed.stderr and "another --out" in changed.stderr


def test_prompts_list_and_show_a_template_filled_from_a_record(tmp_path):
    listed = run_claire("prompts", "list", "--preset", "practical", cache=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "verifier  renders verifier.lenient.j2" in listed.stdout and "inputs:   claim, context, clarifications" in listed.stdout
    shown = run_claire("prompts", "show", "verifier", "--record", f"{FIXTURE}:demo_1", cache=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "━━━━━━━━━━ system ━━━━━━━━━━" in out and "━━━━━━━━━━ user ━━━━━━━━━━" in out
    assert out.index("━━━━━━━━━━ system") < out.index("0.8 to 0.9") < out.index("━━━━━━━━━━ user")
    assert "inputs    claim, context, clarifications, explanations, documents" in out
    assert "values    record demo_1 of wikicollide_mini.json (WikiCollide)" in out and "Michael Collins flew down" in out
    as_json = run_claire("prompts", "show", "controller", "--variant", "practical", "--steps", "1", "--json", cache=tmp_path)
    data = json.loads(as_json.stdout)
    assert [m["role"] for m in data["messages"]] == ["system", "user"] and data["variant"] == "practical"
    assert "After a report, keep looking" in data["messages"][0]["content"] and "Step 1:" in data["messages"][1]["content"]
    for args, message in ((("show", "nope"), "no prompt template 'nope'"),
                          (("show", "verifier", "--variant", "sloppy"), "has no variant 'sloppy'"),
                          (("show", "verifier", "--record", f"{FIXTURE}:missing"), "no record with id 'missing'")):
        failed = run_claire("prompts", *args, cache=tmp_path)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr, failed.stderr


# -- the LLM layer at the command's boundary ------------------------------------------------------
def test_an_eval_counts_and_prices_the_tokens_an_endpoint_served_from_its_prompt_cache(demo_cache, tmp_path):
    args = ("eval", "--index", "demo", "--dataset", str(FIXTURE), "--system", "rav", "--ids", "demo_1,demo_2",
            "--model", "gpt-4o-mini", "--no-cache", "--no-rerank", "--concurrency", "1")
    with MockOpenAIServer(http_responder(), prompt_cache=True) as server:
        first = run_claire(*args, "--base-url", server.base_url, "--out", str(tmp_path / "first"), cache=demo_cache)
        again = run_claire(*args, "--base-url", server.base_url, "--out", str(tmp_path / "again"), cache=demo_cache)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    out = tmp_path / "again"  # the same prompts a second time: the endpoint serves their prefixes from its cache
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    read = [p["usage"]["cache_read_tokens"] for p in predictions]
    assert all(r >= 1024 for r in read) and sum(read) == sum(server.cached_tokens[len(server.cached_tokens) // 2:])
    usage = json.loads((out / "metrics.json").read_text())["usage"]
    assert usage["cache_read_tokens"] == sum(read)
    fresh = usage["prompt_tokens"] - usage["cache_read_tokens"]  # gpt-4o-mini: cached input at half price
    assert usage["cost_usd"] == pytest.approx((fresh * 0.15 + sum(read) * 0.075 + usage["completion_tokens"] * 0.60) / 1e6)
    assert "read from the provider's prompt cache" in (out / "report.md").read_text()
    compared = run_claire("compare", str(tmp_path / "first"), str(out), cache=demo_cache)
    assert compared.returncode == 0 and "cached)" in compared.stdout, compared.stdout


def test_half_a_surrogate_pair_in_a_model_answer_reaches_the_predictions_as_ufffd(demo_cache, tmp_path):
    model = http_responder()

    def broken(body):
        answer = model(body)
        if kind_of(body) == "verifier":
            answer["content"] = answer["content"].replace("disagrees.", "disagrees \ud800 here.")
        return answer

    out = tmp_path / "run"
    with MockOpenAIServer(broken) as server:
        result = run_claire("eval", "--index", "demo", "--dataset", str(FIXTURE), "--system", "rav", "--ids", "demo_1,demo_2",
                            "--no-cache", "--no-rerank", "--base-url", server.base_url, "--out", str(out), cache=demo_cache)
    assert result.returncode == 0, result.stderr
    text = (out / "predictions.jsonl").read_text(encoding="utf-8")
    predictions = [json.loads(line) for line in text.splitlines()]
    assert [p["error"] for p in predictions] == [None, None] and all(p["score"] is not None for p in predictions)
    assert "disagrees \ufffd here." in text and server.calls == 2  # read at once: no retries


def test_a_check_whose_research_failed_gives_no_verdict(demo_cache):
    with MockOpenAIServer(lambda body: {"fault": "malformed"}) as server:
        result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--base-url", server.base_url,
                            "--no-cache", "--no-rerank", "--set", "llm.max_attempts=2", cache=demo_cache)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "CLAIRE verdict" not in result.stdout and "no verdict for this fact" in result.stderr
    assert "unparseable response" in result.stderr and server.calls == 2  # the controller's call, tried twice


@pytest.mark.slow  # one of the slowest end-to-end runs: left out of the quick lane
def test_a_check_heals_a_broken_llm_cache(server, demo_cache, tmp_path):
    import sqlite3

    args = ("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--json", "--base-url", server.base_url,
            "--no-rerank", "--set", f'llm.cache_path="{tmp_path / "llm.sqlite"}"')
    assert run_claire(*args, cache=demo_cache).returncode == 1
    with sqlite3.connect(tmp_path / "llm.sqlite") as db:  # every stored answer damaged
        db.execute("UPDATE answers SET answer = CAST('{\"not\": \"an answer\"' AS BLOB)")
    calls = server.calls
    healed = run_claire(*args, cache=demo_cache)
    assert healed.returncode == 1, healed.stderr  # researched and judged again, not "unparseable" forever
    data = json.loads(healed.stdout)
    assert data["error"] is None and data["verdict"] == "inconsistent" and server.calls > calls
    calls = server.calls
    assert run_claire(*args, cache=demo_cache).returncode == 1 and server.calls == calls  # the rows were replaced


def test_a_check_against_an_endpoint_that_never_answers_waits_one_timeout(demo_cache):
    with MockOpenAIServer(lambda body: {"fault": "hang", "seconds": 4}) as server:
        result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--base-url", server.base_url,
                            "--no-cache", "--no-rerank", "--set", "llm.timeout=1", cache=demo_cache)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no verdict for this fact" in result.stderr and "no answer within 1 s" in result.stderr
    assert server.calls == 1  # one timeout, not llm.max_attempts (6) of them, and nothing after it


def test_the_configuration_is_a_leaf_and_checks_its_names_against_the_registries_when_validated(tmp_path):
    """Importing claire.config loads no registry; validating a configuration loads them and checks its
    names, so a configuration reads the same whichever module was imported first, and a run records
    it so; an unknown name is refused."""
    script = "\n".join([
        "import sys",
        "from claire.config import load_config",
        "print(sorted(name for name in sys.modules if name.startswith('claire.') and name.count('.') > 1))",
        "config = load_config(None, {'agent.tools': 'search', 'retrieval.path': sys.argv[1]})",
        "print(config.agent.tools)",
        "from claire.agent.runtime import run_settings",
        "print(run_settings(config)['agent']['tools'])",
        "try:",
        "    load_config(None, {'agent.system': 'nonesuch'})",
        "except Exception as error:",
        "    print(type(error).__name__, 'unknown system' in str(error))",
    ])
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "idx")], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "CLAIRE_DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    loaded, given, recorded, refused = result.stdout.splitlines()
    assert loaded == "[]"  # no claire.<package>.<module> came with the configuration
    assert given == recorded == "['search', 'report_inconsistency']"
    assert refused == "ConfigError True"


def test_an_eval_whose_scores_are_all_one_says_auroc_means_nothing(demo_cache, tmp_path):
    """The README's oracle knows the shipped sample; a stand-in that knows none of a file's records
    gives every claim one score, and the run says so instead of a silent AUROC 50."""
    from claire.testing.oracle import TOUR, oracle_responder

    with MockOpenAIServer(oracle_responder()) as knowing, MockOpenAIServer(oracle_responder(TOUR)) as blind:
        known = run_claire("eval", "--dataset", str(FIXTURE), "--index", "demo", "--no-rerank", "--out",
                           str(tmp_path / "known"), "--base-url", knowing.base_url, "--model", "oracle", cache=demo_cache)
        unknown = run_claire("eval", "--dataset", str(FIXTURE), "--index", "demo", "--no-rerank", "--out",
                             str(tmp_path / "blind"), "--base-url", blind.base_url, "--model", "oracle", cache=demo_cache)
    assert "AUROC 100.0" in known.stdout and "same score" not in known.stderr
    assert "AUROC 50.0" in unknown.stdout and "every scored claim got the same score (0.1)" in unknown.stderr


def test_a_missing_key_is_said_before_the_agent_or_the_index_is_loaded(tmp_path):
    import subprocess
    import sys

    script = ("import sys\nfrom claire.cli.app import main\ncodes = []\n"
              "for argv in (['check', 'x', '--title', 'P'], ['resolve', 'x', '--title', 'P'], ['scan', '--title', 'P', "
              "'--text', 'x'], ['extract', '--title', 'P', '--text', 'x'], ['cite', 'x', '--source-text', 'y'], "
              "['worklist', '--all']):\n"
              "    sys.argv = ['claire', *argv]\n    try:\n        main()\n    except SystemExit as stop:\n"
              "        codes.append(int(stop.code))\n"
              "heavy = [m for m in ('claire.agent.claire_agent', 'claire.agent.runtime', 'sentence_transformers', 'langgraph')"
              " if m in sys.modules]\nprint(codes, heavy)\n")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI_", "CLAIRE_"))}
    env.update(CLAIRE_DATA_DIR=str(tmp_path), CLAIRE_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout.strip() == "[2, 2, 2, 2, 2, 2] []", result.stdout + result.stderr
    assert result.stderr.count("no API key for the LLM endpoint") == 6


def test_a_usage_error_is_said_like_every_other_error(tmp_path):
    for argv, message in ((["check", "--bogus"], "No such option: --bogus"), (["nonsense"], "No such command")):
        result = run_claire(*argv, cache=tmp_path)
        assert result.returncode == 2 and f"error: {message}" in result.stderr and "Error:" not in result.stderr
        assert "Try 'claire" in result.stderr  # and where to find help
