"""What an evaluation refuses before it starts: empty or negative selections, a trace file that cannot
be written, command-line input that is not what it should be; and a run where too many claims end
in error fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from claire.testing.cli import run_claire
from claire.testing.doubles import http_responder
from claire.testing.mock_openai import MockOpenAIServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
KEY = {"OPENAI_API_KEY": "sk-test-key"}


@pytest.mark.parametrize("args, needle", [
    (["--limit", "-1"], "--limit"), (["--limit", "0"], "--limit"), (["--ids", ","], "--ids"), (["--concurrency", "0"], "--concurrency"),
])
def test_eval_refuses_empty_or_negative_selections(tmp_path, args, needle):
    result = run_claire("eval", "--index", "demo", "--dataset", str(FIXTURES / "wikicollide_mini.json"), "--out", str(tmp_path / "run"), *args,
                        cache=tmp_path, env=KEY, columns=200)
    assert result.returncode == 2 and needle in result.stderr
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_eval_fails_when_too_many_claims_end_in_error(tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    with MockOpenAIServer(lambda body: {"fault": "404"}) as server:
        result = run_claire("eval", "--index", "demo", "--dataset", str(FIXTURES / "wikicollide_mini.json"), "--out", str(tmp_path / "run"),
                            "--system", "rav", "--no-rerank", "--no-cache", "--base-url", server.base_url,
                            "--set", "eval.max_error_share=0.0", cache=tmp_path, env=KEY, columns=200)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error" in result.stderr


def test_trace_out_is_checked_before_the_run(tmp_path):
    with MockOpenAIServer(http_responder()) as server:
        result = run_claire("check", "A fact.", "--trace-out", str(tmp_path), "--base-url", server.base_url,
                            cache=tmp_path, env=KEY, columns=200)
        assert result.returncode == 2 and "--trace-out" in result.stderr
        assert server.calls == 0


def test_command_line_input_that_cannot_be_used_gets_one_clear_line(tmp_path):
    not_utf8 = run_claire("check", os.fsdecode(b"abc\xc3 def"), cache=tmp_path, env=KEY, columns=200)
    assert not_utf8.returncode == 2 and "not UTF-8 text" in not_utf8.stderr and "Traceback" not in not_utf8.stderr
    negative = run_claire("scan", "--text", "A. B. C.", "--title", "T", "--max-facts", "-3", cache=tmp_path, env=KEY, columns=200)
    assert negative.returncode == 2 and "--max-facts" in negative.stderr
    huge = tmp_path / "huge.txt"
    huge.write_text("The tower is tall. " * 60_000, encoding="utf-8")  # 1.1 MB
    refused = run_claire("extract", "--file", str(huge), "--title", "T", cache=tmp_path, env=KEY, columns=200)
    assert refused.returncode == 2 and "MB limit" in refused.stderr
    dead = run_claire("check", "The Eiffel Tower was completed in 1890.", "--base-url", "http://127.0.0.1:9/v1", "--system",
                      "rav", "--no-rerank", "--no-cache", "--set", "llm.max_attempts=1", cache=tmp_path, env=KEY, columns=200)
    assert dead.returncode == 2 and "CLAIRE verdict" not in dead.stdout
    errors = [line for line in dead.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot connect to http://127.0.0.1:9/v1" in errors[0]
