"""`claire index build --from-feverous-pages`, `claire eval --task feverous` and `claire check --task
feverous` end to end: a real index built from the page file tests/fixtures/feverous_lakes_pages.jsonl,
the claims of feverous_lakes_dev.jsonl, and the local OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from claire.evals.runner import score_run
from claire.testing.cli import run_claire
from claire.testing.doubles import first_step, kind_of
from claire.testing.mock_openai import MockOpenAIServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
PAGES_FILE, DEV_FILE = FIXTURES / "feverous_lakes_pages.jsonl", FIXTURES / "feverous_lakes_dev.jsonl"
KEY = {"OPENAI_API_KEY": "sk-feverous-secret-123456"}

ANSWERS = {  # claim fragment -> (label, ids the model cites when it sees them in the prompt)
    "288 m deep": ("SUPPORTS", ["Lake Ohrid_sentence_0", "Lake Ohrid_cell_0_0_1"]),
    "belongs to Greece": ("REFUTES", ["Lake Prespa_cell_0_1_0"]),  # incomplete: the set needs cell_0_1_1 too
    "founded by fishermen": ("NOT ENOUGH INFO", ["Lake Ohrid_item_0_1"]),
}


def feverous_responder(body: dict) -> dict:
    """A model that searches once, then cites only ids it was actually shown in the prompt."""
    kind = kind_of(body)
    user = body["messages"][-1]["content"]
    claim = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
    label, wanted = next(answer for fragment, answer in ANSWERS.items() if fragment in claim)
    shown = [e for e in wanted if f"[{e}]" in user]
    if kind == "controller":
        if first_step(user):
            return {"tool_calls": [{"name": "search", "arguments": {"query": claim}}]}
        return {"tool_calls": [{"name": "finish", "arguments": {}}]}
    if kind == "feverous_verifier":
        return {"content": f"<analysis>see {', '.join(shown)}</analysis>\n<label>{label}</label>\n<evidence>\n" + "\n".join(shown) + "\n</evidence>"}
    if kind == "feverous_nli":
        return {"content": f"<label>{label if shown else 'NOT ENOUGH INFO'}</label>\n<evidence>{' '.join(shown)}</evidence><reason>r</reason>"}
    return {"content": "unexpected prompt"}


@pytest.fixture(scope="module")
def feverous_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("feverous")
    result = run_claire("index", "build", "--from-feverous-pages", str(PAGES_FILE), "--name", "fev", cache=root / "cache",
                        env=KEY, columns=150)
    assert result.returncode == 0, result.stderr
    assert "built index fev: 6 blocks from 2 articles" in result.stdout
    return root, DEV_FILE


@pytest.mark.parametrize("system", ["rav", "nli", "claire"])
def test_eval_task_feverous_end_to_end(feverous_index, tmp_path, system):
    root, dataset = feverous_index
    with MockOpenAIServer(feverous_responder) as server:
        out = tmp_path / "run"
        result = run_claire("eval", "--dataset", str(dataset), "--task", "feverous", "--system", system, "--index", "fev",
                            "--out", str(out), "--base-url", server.base_url, "--no-cache", "--no-rerank",
                            "--set", "baselines.k=5", "--docs-per-query", "5", cache=root / "cache", env=KEY, columns=150)
        assert result.returncode == 0, result.stderr + result.stdout
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    by_id = {p["claim_id"]: p for p in lines}
    assert set(by_id) == {"11", "12", "13"} and all(p["error"] is None for p in lines)
    # ids went pages -> blocks -> index -> prompt -> model -> prediction unchanged
    assert by_id["11"]["predicted_label"] == "SUPPORTS"
    assert set(by_id["11"]["predicted_evidence"]) == {"Lake Ohrid_sentence_0", "Lake Ohrid_cell_0_0_1"}
    assert by_id["12"]["predicted_label"] == "REFUTES" and by_id["12"]["predicted_evidence"] == ["Lake Prespa_cell_0_1_0"]
    assert by_id["13"]["predicted_label"] == "NOT ENOUGH INFO" and by_id["13"]["predicted_evidence"] == ["Lake Ohrid_item_0_1"]
    assert by_id["12"]["gold"]["evidence"] == [["Lake Prespa_cell_0_1_0", "Lake Prespa_cell_0_1_1"]]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "feverous" and metrics["accuracy"] == 1.0
    assert metrics["feverous_score"] == pytest.approx(2 / 3)  # claim 12 lacks half of its only gold set
    assert metrics["evidence_recall"] == pytest.approx(2 / 3) and metrics["evidence_precision"] == 1.0
    report = (out / "report.md").read_text()
    assert "FEVEROUS score" in report and "reference, test set" in report and "| 18 |" in report
    assert "FEVEROUS score 66.7" in result.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["agent"]["task"] == "feverous"
    assert "sk-feverous-secret" not in (out / "predictions.jsonl").read_text() + (out / "config.json").read_text()
    verifier_prompts = [r for r in server.requests if kind_of(r) in ("feverous_verifier", "feverous_nli")]
    assert verifier_prompts and not any("<inconsistency_score>" in r["messages"][0]["content"] for r in server.requests)
    if system == "claire":
        assert any(kind_of(r) == "controller" and "three verdicts" not in r["messages"][0]["content"] for r in server.requests)
        trace = by_id["11"]["trace"]
        assert [t["action_name"] for t in trace] == ["search", "finish", "verifier"] and trace[-1]["action_output"]["label"] == "SUPPORTS"
    # `claire metrics` (score_run) re-scores the run from its predictions alone
    (out / "metrics.json").unlink()
    assert score_run(out)["feverous_score"] == pytest.approx(2 / 3) and (out / "report.md").exists()


def test_check_task_feverous_prints_the_label_and_cited_ids(feverous_index):
    root, _ = feverous_index
    with MockOpenAIServer(feverous_responder) as server:
        result = run_claire("check", "Golem Grad in Lake Prespa belongs to Greece.", "--task", "feverous", "--system", "rav",
                            "--index", "fev", "--json", "--base-url", server.base_url, "--no-cache", "--no-rerank",
                            cache=root / "cache", env=KEY, columns=150)
    assert result.returncode == 1, result.stderr  # REFUTES
    data = json.loads(result.stdout)
    assert data["label"] == "REFUTES" and data["evidence_elements"] == ["Lake Prespa_cell_0_1_0"]
    table = next(e for e in data["evidence"] if e["elements"] and e["elements"][0]["id"] == "Lake Prespa_table_caption_0")
    assert {"id": "Lake Prespa_cell_0_1_0", "text": "Golem Grad"} in table["elements"]


def test_bad_feverous_inputs_are_one_line_errors(feverous_index, tmp_path):
    root, _ = feverous_index
    bad = tmp_path / "bad.jsonl"
    header, first, *_ = DEV_FILE.read_text(encoding="utf-8").splitlines()
    bad.write_text(header + "\n" + json.dumps({**json.loads(first), "label": "MAYBE"}) + "\n")
    result = run_claire("eval", "--dataset", str(bad), "--task", "feverous", "--index", "fev", "--out", str(tmp_path / "o"),
                        "--base-url", "http://127.0.0.1:9/v1", cache=root / "cache", env=KEY, columns=150)
    assert result.returncode == 2 and "bad.jsonl:2: field 'label'" in result.stderr and "Traceback" not in result.stderr
    result = run_claire("eval", "--dataset", str(bad), "--task", "fever", "--out", str(tmp_path / "o"), cache=root / "cache",
                        env=KEY, columns=150)
    assert result.returncode == 2 and "unknown task" in result.stderr and "Traceback" not in result.stderr
    pages = tmp_path / "pages.jsonl"
    pages.write_text(json.dumps({"title": "X", "order": ["sentence_3"]}) + "\n")
    result = run_claire("index", "build", "--from-feverous-pages", str(pages), "--name", "bad", cache=root / "cache",
                        env=KEY, columns=150)
    assert result.returncode == 2 and re.search(r"pages.jsonl:1: field 'order' names 'sentence_3'", result.stderr)
    assert not (tmp_path / "o" / "predictions.jsonl").exists()


