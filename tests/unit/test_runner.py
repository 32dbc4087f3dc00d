"""The batch runner and its run directory, in process with a fake system over the mini fixture's
claims: one line per claim, resuming after crashes (torn and damaged lines), retrying errors, bounded
concurrency, no secrets on disk, thresholds from a dev run (a run killed with kill -9 is in
tests/integration/test_runner.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rich.console import Console

from claire.config import Config
from claire.errors import ConfigError, DatasetError
from claire.evals.thresholds import resolve_threshold
from claire.runs.predictions import load_predictions
from claire.evals.reporting import compare_runs, comparison_rows
from claire.testing.fake_system import FakeSystem, score_for
from claire.evals.runner import pending_claims, run_eval, score_run

COMPARED = ("auroc", "auroc_ci95", "accuracy", "precision", "recall", "f1", "confusion", "recall_by_type", "counts")


def lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def run(claims, system, out, **kwargs):
    kwargs.setdefault("show_progress", False)
    return asyncio.run(run_eval(claims, system, out, **kwargs))


def same_metrics(a: dict, b: dict) -> None:
    assert {k: a[k] for k in COMPARED} == {k: b[k] for k in COMPARED}


def test_one_line_per_claim_and_the_run_files(tmp_path, mini_claims):
    system = FakeSystem()
    summary = run(mini_claims, system, tmp_path / "run", concurrency=3)
    rows = lines(tmp_path / "run")
    assert sorted(r["claim_id"] for r in rows) == sorted(c.claim_id for c in mini_claims)
    first = next(r for r in rows if r["claim_id"] == "demo_1")
    assert first["system"] == "claire" and first["label"] == "inconsistent"
    assert first["inconsistency_type"] == "NamedEntityDiscrepancy"
    assert first["score"] == score_for(mini_claims[0]) and first["verdict"] == "inconsistent"
    assert first["evidence_ids"] == ["blk-demo_1"] and first["error"] is None
    assert first["usage"]["total_tokens"] == 100 and first["latency_s"] > 0
    assert first["trace"] == [{"action_name": "search", "action_argument": mini_claims[0].text[:20], "action_output": ["blk"]}]
    assert system.peak == 3  # bounded by concurrency, and actually concurrent
    for name in ("config.json", "metrics.json", "report.md", "roc.png"):
        assert (tmp_path / "run" / name).is_file()
    assert summary.total == 10 and summary.ran == 10 and summary.skipped == 0 and summary.errors == 0
    assert summary.metrics["auroc"] == pytest.approx(24 / 25)
    assert summary.metrics["usage"]["total_tokens"] == 1000
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["auroc"] == summary.metrics["auroc"]
    assert "| **claire** (this run)" in (tmp_path / "run" / "report.md").read_text()


def test_rerun_skips_everything(tmp_path, mini_claims):
    run(mini_claims, FakeSystem(), tmp_path / "run")
    again = FakeSystem()
    summary = run(mini_claims, again, tmp_path / "run")
    assert again.calls == [] and summary.skipped == 10 and len(lines(tmp_path / "run")) == 10


def test_resume_after_a_crash_with_a_torn_line(tmp_path, mini_claims):
    clean = run(mini_claims, FakeSystem(), tmp_path / "clean")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    whole = (tmp_path / "clean" / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (crashed / "predictions.jsonl").write_text("".join(whole[:4]) + whole[4][: len(whole[4]) // 2], encoding="utf-8")
    assert len(load_predictions(crashed)) == 4  # the torn line is ignored when reading
    assert len(pending_claims(mini_claims, crashed)) == 6

    resumed_system = FakeSystem()
    resumed = run(mini_claims, resumed_system, crashed)
    assert sorted(resumed_system.calls) == sorted(c.claim_id for c in mini_claims if c.claim_id not in
                                                   {json.loads(line)["claim_id"] for line in whole[:4]})
    rows = lines(crashed)
    assert len(rows) == 10 and len({r["claim_id"] for r in rows}) == 10
    same_metrics(resumed.metrics, clean.metrics)


def test_a_complete_last_line_missing_its_newline_is_kept(tmp_path, mini_claims):
    run(mini_claims[:3], FakeSystem(), tmp_path / "run")
    path = tmp_path / "run" / "predictions.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    system = FakeSystem()
    run(mini_claims, system, tmp_path / "run")
    assert len(system.calls) == 7 and len(lines(tmp_path / "run")) == 10


def test_a_damaged_middle_line_is_moved_aside_and_its_claim_run_again(tmp_path, mini_claims, caplog):
    clean = run(mini_claims, FakeSystem(), tmp_path / "clean")
    out = tmp_path / "run"
    run(mini_claims[:4], FakeSystem(), out)
    path = out / "predictions.jsonl"
    rows = path.read_text().splitlines()
    damaged_id = json.loads(rows[1])["claim_id"]
    rows[1] = rows[1][:40] + "\x00garbage" + rows[1][60:]  # line 2 corrupted in place
    rows.insert(3, '{"claim_id": 5}')  # and a line that is JSON but not a prediction (line 4)
    path.write_text("\n".join(rows) + "\n")

    with caplog.at_level("WARNING"):  # reading alone leaves them out and says which lines
        assert len(load_predictions(out)) == 3
    assert "line 2" in caplog.text and "line 4" in caplog.text and "field claim_id" in caplog.text
    caplog.clear()

    system = FakeSystem()
    with caplog.at_level("WARNING"):
        summary = run(mini_claims, system, out)
    assert f"line 2 (claim {damaged_id}) is damaged" in caplog.text and "predictions.rejected.jsonl" in caplog.text
    assert damaged_id in system.calls and len(system.calls) == 7  # the damaged claim and the 6 never run
    rejected = [json.loads(line) for line in (out / "predictions.rejected.jsonl").read_text().splitlines()]
    assert [r["line"] for r in rejected] == [2, 4]
    assert "garbage" in rejected[0]["text"] and rejected[1]["text"] == '{"claim_id": 5}'
    assert len(lines(out)) == 10 and {r["claim_id"] for r in lines(out)} == {c.claim_id for c in mini_claims}
    same_metrics(summary.metrics, clean.metrics)


def test_errors_are_recorded_and_retried_on_request(tmp_path, mini_claims):
    out = tmp_path / "run"
    first = run(mini_claims, FakeSystem(fail={"demo_2"}, explode={"demo_7"}), out)
    assert first.errors == 2 and first.metrics["counts"]["errors"] == 2 and first.metrics["counts"]["scored"] == 8
    by_id = {r["claim_id"]: r for r in lines(out)}
    assert by_id["demo_2"]["error"] == "LLMError: the endpoint kept failing" and by_id["demo_2"]["score"] is None
    assert by_id["demo_7"]["error"] == "RuntimeError: the fake system exploded"
    assert by_id["demo_7"]["label"] == "consistent"

    plain = FakeSystem()
    run(mini_claims, plain, out)
    assert plain.calls == []  # errors stay recorded unless asked to retry

    retry = FakeSystem()
    second = run(mini_claims, retry, out, retry_errors=True)
    assert sorted(retry.calls) == ["demo_2", "demo_7"]
    rows = lines(out)
    assert len(rows) == 10 and all(r["error"] is None for r in rows)
    assert second.errors == 0 and second.metrics["counts"]["scored"] == 10
    same_metrics(second.metrics, run(mini_claims, FakeSystem(), tmp_path / "clean").metrics)


def test_config_json_has_no_secrets_and_one_system_per_dir(tmp_path, mini_claims):
    secret = "sk-test-abcdefghijklmnop-SECRET-9876"
    config = Config().with_overrides({"llm.api_key": secret, "retrieval.qdrant_api_key": "qdrant-key-1234567890"})
    out = tmp_path / "run"
    run(mini_claims[:2], FakeSystem(), out, config_public=config.public_dict(), dataset=tmp_path / "dev.json")
    text = (out / "config.json").read_text()
    assert secret not in text and "qdrant-key-1234567890" not in text
    for path in out.iterdir():
        if path.suffix in (".json", ".jsonl", ".md"):
            assert secret not in path.read_text()
    saved = json.loads(text)
    assert saved["config"]["llm"]["api_key"] == "****9876"
    assert saved["system"] == "claire" and saved["split"] == "validation" and saved["claire_version"]
    with pytest.raises(ConfigError, match="holds a run of 'claire', not 'rav'"):
        run(mini_claims, FakeSystem("rav"), out)
    with pytest.raises(ConfigError, match="one dataset per run directory"):
        run(mini_claims, FakeSystem(), out, dataset=tmp_path / "test.json")


def test_threshold_from_a_validation_run(tmp_path, mini_claims):
    dev = tmp_path / "dev"
    run(mini_claims, FakeSystem(), dev, dataset=tmp_path / "dev.json")
    value, source = resolve_threshold("claire", threshold_from=dev)
    # F1 10/11: every inconsistent claim (the lowest scores 0.45), one false alarm; scores flag above
    # the threshold, so it lies halfway between 0.45 and the next lower score, 0.4
    assert value == 0.425 and source == f"best F1 on {dev}"
    test = run(mini_claims, FakeSystem(), tmp_path / "test", dataset=tmp_path / "test.json", threshold_from=dev)
    assert test.metrics["split"] == "test" and test.metrics["threshold"] == 0.425 and test.metrics["recall"] == 1.0
    with pytest.raises(ConfigError, match="is a run of 'claire', not 'nli'"):
        resolve_threshold("nli", threshold_from=dev)
    default = run(mini_claims, FakeSystem(), tmp_path / "test-default", dataset=tmp_path / "test.json")
    assert "threshold_from" in default.metrics["threshold_hint"]
    rescored = score_run(tmp_path / "test-default", threshold_from=dev)
    assert rescored["threshold"] == 0.425 and rescored["wall_time_s"] == default.metrics["wall_time_s"]
    assert json.loads((tmp_path / "test-default" / "metrics.json").read_text())["threshold"] == 0.425


def test_one_class_run_reports_instead_of_crashing(tmp_path, mini_claims):
    consistent = [c for c in mini_claims if c.label == "consistent"]
    summary = run(consistent, FakeSystem(), tmp_path / "run")
    assert summary.metrics["auroc"] is None
    assert "only 'consistent'" in (tmp_path / "run" / "report.md").read_text()
    assert not (tmp_path / "run" / "roc.png").exists()


def test_duplicate_claim_ids_are_refused(tmp_path, mini_claims):
    with pytest.raises(DatasetError, match="demo_1"):
        run([mini_claims[0], mini_claims[0]], FakeSystem(), tmp_path / "run")


def test_compare_runs_side_by_side(tmp_path, mini_claims):
    run(mini_claims, FakeSystem(), tmp_path / "a")
    run(mini_claims, FakeSystem(fail={"demo_3"}), tmp_path / "b")
    rows = comparison_rows([tmp_path / "a", tmp_path / "b"])
    assert rows[0]["delta"]["auroc"] is None
    # Without demo_3 (inconsistent, 0.45, the one ranked below a consistent claim): AUROC 20/20.
    assert rows[1]["delta"]["auroc"] == pytest.approx(1.0 - 24 / 25)
    console = Console(record=True, width=250)
    console.print(compare_runs([tmp_path / "a", tmp_path / "b"]))
    text = console.export_text()
    assert "96.0" in text and "100.0" in text and "(+4.0)" in text  # the difference sits under the score
    assert "different claims" not in text  # both runs cover the same ten claims
    run(mini_claims[:5], FakeSystem(), tmp_path / "c")
    console.print(compare_runs([tmp_path / "a", tmp_path / "c"]))
    assert "these runs cover different claims" in console.export_text()
    (tmp_path / "c" / "metrics.json").unlink()
    with pytest.raises(ConfigError, match="has no metrics.json"):
        compare_runs([tmp_path / "a", tmp_path / "c"])


def test_compare_reads_at_80_columns_in_a_pipe_and_as_csv_and_names_differing_settings(tmp_path, mini_claims):
    import csv as csv_module
    import io

    from claire.evals.reporting import compare_blocks, compare_text

    run(mini_claims, FakeSystem(), tmp_path / "a", config_public={"retrieval": {"rerank": True}, "eval": {"concurrency": 4}})
    run(mini_claims, FakeSystem(fail={"demo_3"}), tmp_path / "b",
        config_public={"retrieval": {"rerank": False}, "eval": {"concurrency": 8}})
    dirs = [tmp_path / "a", tmp_path / "b"]
    markdown = compare_text(dirs, "markdown")
    assert markdown.splitlines()[2].startswith("| Run |") and "\n| a |" in markdown and "\n| b |" in markdown
    assert "Settings that differ: retrieval.rerank (a: true, b: false)." in markdown
    assert "concurrency" not in markdown.split("Settings that differ")[1]  # neutral settings are no difference
    rows = list(csv_module.DictReader(io.StringIO(compare_text(dirs, "csv"))))
    assert [r["Run"] for r in rows] == ["a", "b"] and rows[1]["AUROC (95% CI)"].endswith("(+4.0)")
    blocks = compare_blocks(dirs)
    assert max(len(line) for line in blocks.splitlines() if not line.startswith(("Calls,", "Settings", "All:"))) <= 80
    assert "  AUROC (95% CI): 100.0" in blocks and "…" not in blocks
    assert "  All: AUROC/F1: —" in blocks.split("\nb\n")[0] and "All: AUROC and F1 over every claim" in blocks
    assert "  All: AUROC/F1: " in blocks.split("\nb\n")[1]  # b's failed claim counted as consistent


def test_a_run_directory_is_used_by_one_process_at_a_time(tmp_path):
    from claire.errors import ConfigError
    from claire.runs.predictions import PredictionLog

    first = PredictionLog(tmp_path / "run")
    with pytest.raises(ConfigError, match="in use by another claire process"):
        PredictionLog(tmp_path / "run")
    first.close()
    PredictionLog(tmp_path / "run").close()  # free again once the first is closed


def test_a_run_from_before_presets_resumes_with_the_practical_preset_and_prompt_changes_are_refused():
    from claire.config import load_config
    from claire.evals.runner import config_differences

    practical = load_config(None, {"preset": "practical"}).public_dict()
    old = json.loads(json.dumps(practical))  # as an earlier CLAIRE wrote it: no preset, no new settings
    del old["preset"], old["agent"]["snippet_chars"], old["agent"]["finish_action"], old["llm"]["prompt_header"]
    old["prompts"]["variants"] = {}  # its default prompts are today's practical variants
    old["agent"]["stop_on_report"] = True  # its research stopped at the first report; practical's goes on now
    assert config_differences(old, practical) == ["agent.stop_on_report: True -> False"]
    stopping = load_config(None, {"preset": "practical", "agent.stop_on_report": True}).public_dict()
    assert config_differences(old, stopping) == []
    paper = load_config(None, {}).public_dict()
    changed = " ".join(config_differences(old, paper))
    assert "agent.snippet_chars" in changed and "retrieval.mode" in changed and "verifier" in changed
    # a run that recorded its prompt texts refuses to resume with others; one that did not, cannot tell
    assert config_differences({**paper, "prompts_digest": "a"}, {**paper, "prompts_digest": "b"})
    assert config_differences(paper, {**paper, "prompts_digest": "b"}) == []


def test_the_progress_line_counts_the_tokens_of_answers_from_the_cache():
    from types import SimpleNamespace

    from claire.evals.runner import _Tally

    tally = _Tally()
    tally.add(SimpleNamespace(usage={"total_tokens": 0, "cached_prompt_tokens": 1200, "cached_completion_tokens": 30},
                              error=None))
    assert str(tally) == "errors 0 · 0 tokens (+1,230 from the cache) · —"  # not a bare "0 tokens"
