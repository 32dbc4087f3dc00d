"""The evaluation protocol cannot mislead: an index built from one split's claims records them, and
`claire eval` warns (or with --strict refuses) when other claims are evaluated on it; a test run of
the paper preset at the default 0.5 says it is not the paper's protocol; --validation runs the
validation set first and decides the test verdicts at its best-F1 threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claire.testing.cli import run_claire
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.oracle import oracle_responder

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "wikicollide_mini.json"


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    """The mini sample cut in two: dev-mini.json and test-mini.json, an index of each split's passages."""
    folder = tmp_path_factory.mktemp("protocol")
    records = json.loads(MINI.read_text(encoding="utf-8"))
    (folder / "dev-mini.json").write_text(json.dumps(records[:5]), encoding="utf-8")
    (folder / "test-mini.json").write_text(json.dumps(records[5:]), encoding="utf-8")
    cache = folder / "cache"
    for split in ("dev", "test"):
        built = run_claire("index", "build", "--from-wikicollide", str(folder / f"{split}-mini.json"), "--name",
                           f"mini-{split}", cache=cache)
        assert built.returncode == 0, built.stderr
    return folder, cache


def test_an_index_records_the_claims_it_was_built_for_and_eval_says_when_others_are_evaluated(splits):
    folder, cache = splits
    meta = json.loads((cache / "indexes" / "mini-dev" / "meta.json").read_text())
    assert meta["claims_of"] == "dev-mini.json" and len(meta["claim_ids"]) == 5
    refused = run_claire("eval", "--dataset", str(folder / "test-mini.json"), "--index", "mini-dev", "--strict",
                         "--out", str(folder / "refused"), cache=cache)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    said = " ".join(refused.stderr.split())
    assert "holds the passages of the claims of dev-mini.json" in said and "--strict refuses" in said
    assert not (folder / "refused" / "predictions.jsonl").exists()  # refused before any claim ran


def test_validation_then_test_in_one_command_and_a_bare_test_run_says_it_is_not_the_papers_protocol(splits):
    folder, cache = splits
    with MockOpenAIServer(oracle_responder(), model="oracle") as server:
        common = ("--system", "rav", "--no-rerank", "--base-url", server.base_url, "--model", "oracle", "--no-cache")
        bare = run_claire("eval", "--dataset", str(folder / "test-mini.json"), "--index", "mini-test", "--out",
                          str(folder / "bare"), *common, cache=cache)
        assert bare.returncode == 0, bare.stderr
        said = " ".join(bare.stderr.split())
        assert "not the paper's protocol" in said and "holds the passages" not in said  # its own claims' index
        both = run_claire("eval", "--dataset", str(folder / "test-mini.json"), "--index", "mini-test",
                          "--validation", str(folder / "dev-mini.json"), "--validation-index", "mini-dev", "--strict",
                          "--out", str(folder / "test-rav"), *common, cache=cache)
    assert both.returncode == 0, both.stderr
    assert "not the paper's protocol" not in " ".join(both.stderr.split())
    validation = folder / "test-rav-validation"
    assert len((validation / "predictions.jsonl").read_text().splitlines()) == 5
    test = json.loads((folder / "test-rav" / "metrics.json").read_text())
    assert test["threshold_source"].startswith(f"best F1 on {validation}") and "threshold_hint" not in test
    bare = json.loads((folder / "bare" / "metrics.json").read_text())
    assert bare["threshold"] == 0.5 and "no validation run" in bare["threshold_hint"]
