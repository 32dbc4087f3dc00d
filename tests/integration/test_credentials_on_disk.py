"""Keys in URLs, or pasted into the API key variable, are never written to run directories,
caches or output."""

from __future__ import annotations

from pathlib import Path


from claire.testing.cli import run_claire
from claire.testing.doubles import http_responder
from claire.testing.mock_openai import MockOpenAIServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
KEY = {"OPENAI_API_KEY": "sk-test-key"}


def test_keys_in_urls_and_pasted_into_api_key_env_are_never_written(tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    secret = "sk-topsecret-0123456789abcdef"
    shown = run_claire("config", "show", "--json", cache=tmp_path, env={**KEY, "CLAIRE_LLM__API_KEY_ENV": secret}, columns=200)
    assert shown.returncode == 2 and secret not in shown.stdout + shown.stderr
    assert "api_key_env" in shown.stderr and "environment variable" in shown.stderr

    with MockOpenAIServer(http_responder()) as server:
        base = server.base_url.replace("http://", f"http://user:{secret}@")
        shown = run_claire("config", "show", "--json", "--set", f'llm.base_url="{base}"', cache=tmp_path, env=KEY, columns=200)
        assert shown.returncode == 0 and secret not in shown.stdout
        run = tmp_path / "run"
        result = run_claire("eval", "--index", "demo", "--dataset", str(FIXTURES / "wikicollide_mini.json"), "--out", str(run), "--limit", "1",
                            "--system", "rav", "--no-rerank", "--no-cache", "--base-url", base, cache=tmp_path, env=KEY, columns=200)
        assert result.returncode == 0, result.stderr
        assert secret not in result.stdout + result.stderr
        for path in run.iterdir():
            if path.is_file() and path.suffix in (".json", ".jsonl", ".md"):
                assert secret not in path.read_text(encoding="utf-8"), path.name
    dead = run_claire("check", "A fact.", "--base-url", f"http://user:{secret}@127.0.0.1:9/v1", "--system", "rav", "--no-rerank",
                      "--no-cache", "--set", "llm.max_attempts=1", cache=tmp_path, env=KEY, columns=200)
    assert dead.returncode == 2 and secret not in dead.stdout + dead.stderr
