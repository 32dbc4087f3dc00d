"""Over-long facts through the real `claire` command: `claire check` and `claire eval` refuse a
fact above agent.max_fact_chars with a one-line pointer to `claire scan`, before anything is opened."""

from __future__ import annotations

import json
from pathlib import Path

from claire.testing.cli import run_claire

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
PASTED = "The tower was built in 1889 by Gustave Eiffel's company. " * 900  # ~50 KB pasted by mistake
KEY = {"OPENAI_API_KEY": "sk-x"}


def test_cli_check_refuses_a_pasted_article_with_the_hint(tmp_path):
    result = run_claire("check", PASTED, "--title", "Eiffel Tower", "--base-url", "http://127.0.0.1:9/v1", cache=tmp_path, env=KEY)
    assert result.returncode == 2, result.stderr
    assert "over the limit of 2,000" in result.stderr and "claire scan" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "indexes").exists()  # refused before anything was opened or built


def test_cli_eval_refuses_a_dataset_with_an_over_long_claim(tmp_path):
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    records[2]["claim"]["claim_text"] = PASTED
    dataset = tmp_path / "dev.json"
    dataset.write_text(json.dumps(records), encoding="utf-8")
    result = run_claire("eval", "--index", "demo", "--dataset", str(dataset), "--out", str(tmp_path / "run"), cache=tmp_path, env=KEY)
    assert result.returncode == 2, result.stderr
    assert records[2]["claim"]["claim_id"] in result.stderr and "claire scan" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
