"""FEVEROUS: page conversion with element ids, the loader, three-way parsing, the FEVEROUS score on
hand-computed cases, and `claire eval --task feverous` end to end over a real index built from a
page file and the local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from claire.evals.runner import score_run
from claire.testing.doubles import kind_of
from claire.testing.mock_openai import MockOpenAIServer

PAGES = [
    {"title": "Lake Ohrid", "order": ["sentence_0", "table_0", "section_0", "sentence_1", "list_0"],
     "sentence_0": "[[Lake Ohrid]] lies on the border of [[North Macedonia]] and [[Albania|Albania]].",
     "table_0": {"type": "infobox", "table": [
         [{"id": "header_cell_0_0_0", "value": "Max. depth", "is_header": True}, {"id": "cell_0_0_1", "value": "288 m", "is_header": False}],
         [{"id": "header_cell_0_1_0", "value": "Surface area", "is_header": True}, {"id": "cell_0_1_1", "value": "358 km2", "is_header": False}]]},
     "section_0": {"value": "Towns", "level": 1},
     "sentence_1": "Several towns lie on its shore.",
     "list_0": {"list": [{"id": "item_0_0", "value": "[[Ohrid]]", "level": 0}, {"id": "item_0_1", "value": "[[Struga]], where the Black Drin leaves the lake", "level": 0}]}},
    {"title": "Lake Prespa", "order": ["sentence_0", "section_0", "table_0"],
     "sentence_0": "Lake Prespa is shared by North Macedonia, Albania and Greece.",
     "section_0": {"value": "Islands", "level": 1},
     "table_0": {"caption": "Islands of the lake", "table": [
         [{"id": "header_cell_0_0_0", "value": "Island", "is_header": True}, {"id": "header_cell_0_0_1", "value": "Country", "is_header": True}],
         [{"id": "cell_0_1_0", "value": "Golem Grad", "is_header": False}, {"id": "cell_0_1_1", "value": "North Macedonia", "is_header": False}]]}},
]
HEADER = {"id": "", "label": "", "claim": "", "evidence": [], "annotator_operations": None, "challenge": None}
RECORDS = [
    {"id": 11, "label": "SUPPORTS", "claim": "Lake Ohrid, on the Albanian border, is 288 m deep.",
     "evidence": [{"content": ["Lake Ohrid_sentence_0", "Lake Ohrid_cell_0_0_1"], "context": {}}], "challenge": "Combining Tables and Text"},
    {"id": 12, "label": "REFUTES", "claim": "Golem Grad in Lake Prespa belongs to Greece.",
     "evidence": [{"content": ["Lake Prespa_cell_0_1_0", "Lake Prespa_cell_0_1_1"], "context": {}}], "challenge": "Numerical Reasoning"},
    {"id": 13, "label": "NOT ENOUGH INFO", "claim": "Struga was founded by fishermen.",
     "evidence": [{"content": ["Lake Ohrid_item_0_1"], "context": {}}], "challenge": "Other"},
]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# -- pages -> blocks -----------------------------------------------------------------------------


# -- the loader ----------------------------------------------------------------------------------


# -- parsing and limits --------------------------------------------------------------------------


# -- the FEVEROUS score on hand-computed cases ---------------------------------------------------


# -- end to end: pages -> index -> claire eval --task feverous -> metrics -----------------------

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
        if "You have not taken any action yet" in user:
            return {"tool_calls": [{"name": "search", "arguments": {"query": claim}}]}
        return {"tool_calls": [{"name": "finish", "arguments": {}}]}
    if kind == "feverous_verifier":
        return {"content": f"<analysis>see {', '.join(shown)}</analysis>\n<label>{label}</label>\n<evidence>\n" + "\n".join(shown) + "\n</evidence>"}
    if kind == "feverous_nli":
        return {"content": f"<label>{label if shown else 'NOT ENOUGH INFO'}</label>\n<evidence>{' '.join(shown)}</evidence><reason>r</reason>"}
    return {"content": "unexpected prompt"}


def claire(*args: str, cache: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CLAIRE_", "OPENAI_"))}
    environment.update({"CLAIRE_CACHE_DIR": str(cache), "CLAIRE_DATA_DIR": str(cache), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "150",
                        "OPENAI_API_KEY": "sk-feverous-secret-123456"})
    return subprocess.run([sys.executable, "-m", "claire.cli", *args], capture_output=True, text=True, env=environment,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def feverous_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("feverous")
    pages = write_jsonl(root / "pages.jsonl", PAGES)
    dataset = write_jsonl(root / "dev.jsonl", [HEADER, *RECORDS])
    result = claire("index", "build", "--from-feverous-pages", str(pages), "--name", "fev", cache=root / "cache")
    assert result.returncode == 0, result.stderr
    assert "built index fev: 6 blocks from 2 articles" in result.stdout
    return root, dataset


@pytest.mark.parametrize("system", ["rav", "nli", "claire"])
def test_eval_task_feverous_end_to_end(feverous_index, tmp_path, system):
    root, dataset = feverous_index
    with MockOpenAIServer(feverous_responder) as server:
        out = tmp_path / "run"
        result = claire("eval", "--dataset", str(dataset), "--task", "feverous", "--system", system, "--index", "fev",
                        "--out", str(out), "--base-url", server.base_url, "--no-cache", "--no-rerank",
                        "--set", "baselines.k=5", "--docs-per-query", "5", cache=root / "cache")
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
        result = claire("check", "Golem Grad in Lake Prespa belongs to Greece.", "--task", "feverous", "--system", "rav",
                        "--index", "fev", "--json", "--base-url", server.base_url, "--no-cache", "--no-rerank", cache=root / "cache")
    assert result.returncode == 1, result.stderr  # REFUTES
    data = json.loads(result.stdout)
    assert data["label"] == "REFUTES" and data["evidence_elements"] == ["Lake Prespa_cell_0_1_0"]
    table = next(e for e in data["evidence"] if e["elements"] and e["elements"][0]["id"] == "Lake Prespa_table_caption_0")
    assert {"id": "Lake Prespa_cell_0_1_0", "text": "Golem Grad"} in table["elements"]


def test_bad_feverous_inputs_are_one_line_errors(feverous_index, tmp_path):
    root, _ = feverous_index
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(HEADER) + "\n" + json.dumps({**RECORDS[0], "label": "MAYBE"}) + "\n")
    result = claire("eval", "--dataset", str(bad), "--task", "feverous", "--index", "fev", "--out", str(tmp_path / "o"),
                    "--base-url", "http://127.0.0.1:9/v1", cache=root / "cache")
    assert result.returncode == 2 and "bad.jsonl:2: field 'label'" in result.stderr and "Traceback" not in result.stderr
    result = claire("eval", "--dataset", str(bad), "--task", "fever", "--out", str(tmp_path / "o"), cache=root / "cache")
    assert result.returncode == 2 and "unknown task" in result.stderr and "Traceback" not in result.stderr
    pages = tmp_path / "pages.jsonl"
    pages.write_text(json.dumps({"title": "X", "order": ["sentence_3"]}) + "\n")
    result = claire("index", "build", "--from-feverous-pages", str(pages), "--name", "bad", cache=root / "cache")
    assert result.returncode == 2 and re.search(r"pages.jsonl:1: field 'order' names 'sentence_3'", result.stderr)
    assert not (tmp_path / "o" / "predictions.jsonl").exists()


