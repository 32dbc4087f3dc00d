"""A system written outside CLAIRE that misbehaves fails as its own, in one line naming it, exit 2:
scores that are not numbers of their range (NaN, -3, 7, inf, a string) are no verdict, a hang is cut
by agent.claim_timeout, an oversized explanation is cut and marked, and failures at import, in
from_config or in assess (sys.exit included) never read as CLAIRE's bug or as a verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from claire.testing.cli import run_claire

HOSTILE = '''
import asyncio, sys
from claire.domain import Assessment

class Scored:
    name = "scored"
    score_kind = "probability"
    value = 0.5

    @classmethod
    def from_config(cls, parts):
        return cls()

    async def assess(self, claim):
        answer = Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=0.5, threshold=0.5)
        answer.score = self.value
        answer.verdict = "consistent"  # a sloppy system decides for itself
        return answer

class NaNScore(Scored):
    value = float("nan")

class Negative(Scored):
    value = -3.0

class Seven(Scored):
    value = 7.0

class Infinite(Scored):
    value = float("inf")

class Worded(Scored):
    value = "high"

class Hangs(Scored):
    async def assess(self, claim):
        await asyncio.sleep(3600)

class Exits(Scored):
    async def assess(self, claim):
        raise SystemExit(3)

class Huge(Scored):
    async def assess(self, claim):
        answer = await super().assess(claim)
        answer.reasoning = "x" * 3_000_000
        return answer

class Dict(Scored):
    async def assess(self, claim):
        return {"score": 0.5}

class NoneBuilt(Scored):
    @classmethod
    def from_config(cls, parts):
        return None

class BadConfig(Scored):
    @classmethod
    def from_config(cls, parts):
        raise KeyError("threshold")
'''


@pytest.fixture(scope="module")
def cache(tmp_path_factory, copy_demo_index):
    """A cache folder with a copy of the session's demo index."""
    folder = tmp_path_factory.mktemp("hostile-cache")
    copy_demo_index(folder / "indexes")
    return folder


KEY = {"OPENAI_API_KEY": "sk-hostile-test-key"}


@pytest.fixture
def systems(tmp_path, monkeypatch):
    """A module of hostile systems on the path (a fresh module name per test: systems are cached by name)."""
    name = f"hostile_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(HOSTILE)
    (tmp_path / f"{name}_import.py").write_text("raise RuntimeError('broken at import')\n")
    (tmp_path / f"{name}_exit.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def check(system: str, cache: Path, *more: str):
    return run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--system", system,
                      "--no-report", *more, cache=cache, env=KEY)


@pytest.mark.parametrize("cls, problem", [
    ("NaNScore", "a score that is not a finite number (nan)"), ("Negative", "a score outside [0, 1] (-3)"),
    ("Seven", "a score outside [0, 1] (7)"), ("Infinite", "a score that is not a finite number (inf)"),
    ("Worded", "a score that is not a number (str 'high')"),
])
def test_an_impossible_score_is_no_verdict(systems, cache, cls, problem):
    result = check(f"{systems}:{cls}", cache)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert problem in result.stderr and "your system scored" in result.stderr
    assert "CONSISTENT" not in result.stdout and "INCONSISTENT" not in result.stdout
    assert "Traceback" not in result.stderr and "Unknown format code" not in result.stderr


def test_an_eval_of_impossible_scores_records_failures_in_strict_json(systems, cache, tmp_path):
    out = tmp_path / "run"
    dataset = Path(__file__).resolve().parents[1] / "fixtures" / "wikicollide_mini.json"
    result = run_claire("eval", "--dataset", str(dataset), "--index", "demo", "--system", f"{systems}:NaNScore",
                        "--out", str(out), "--limit", "3", cache=cache, env=KEY)
    assert result.returncode == 2 and "3 errors" in result.stdout, (result.stdout, result.stderr)
    def refuse(constant):
        raise AssertionError(f"{constant} written into JSON")

    for line in (json.loads(row, parse_constant=refuse) for row in (out / "predictions.jsonl").read_text().splitlines()):
        assert line["score"] is None and line["verdict"] is None and "not a finite number" in line["error"]


def test_a_system_that_never_answers_is_cut_by_the_claim_timeout(systems, cache):
    result = check(f"{systems}:Hangs", cache, "--set", "agent.claim_timeout=1")
    assert result.returncode == 2
    assert "took longer than 1 s on this claim (agent.claim_timeout)" in result.stderr


def test_failures_of_a_users_system_are_said_as_its_own(systems, cache):
    cases = {
        f"{systems}:Exits": "called sys.exit(3) while checking the claim",
        f"{systems}:NoneBuilt": "from_config returned NoneType, not a system with an assess method",
        f"{systems}:Dict": "answered a dict, not an answer object",
        f"{systems}:BadConfig": "from_config failed: KeyError: 'threshold'",
        f"{systems}_import:Whatever": "importing " + systems + "_import failed: RuntimeError: broken at import",
        f"{systems}_exit:Whatever": "importing " + systems + "_exit called sys.exit(0)",
    }
    for system, words in cases.items():
        result = check(system, cache)
        assert result.returncode == 2, (system, result.stdout, result.stderr)
        assert words in result.stderr, (system, result.stderr)
        assert "internal error" not in result.stderr and "please report" not in result.stderr
        assert len(result.stderr.strip().splitlines()) <= 2, result.stderr


def test_an_oversized_answer_is_cut_and_marked(systems, cache):
    result = check(f"{systems}:Huge", cache, "--json", "--set", "agent.max_answer_chars=5000")
    data = json.loads(result.stdout)
    assert len(data["reasoning"]) < 6000 and data["reasoning"].endswith("more characters]")
    assert "reasoning" in data["details"]["cut"]


def test_a_sweep_loads_every_cells_system_before_the_first_call(tmp_path, cache):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\ngrid:\n  agent.system: [rav, nli, nosuch.mod:X]\n")
    dataset = Path(__file__).resolve().parents[1] / "fixtures" / "wikicollide_mini.json"
    result = run_claire("sweep", str(sweep), "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--index", "demo",
                        "--base-url", "http://127.0.0.1:9/v1", cache=cache)
    assert result.returncode == 2 and "cell system=nosuch.mod:X" in result.stderr and "cannot import nosuch.mod" in result.stderr
    assert not (tmp_path / "out" / "system=rav").exists()


def test_a_trace_out_that_cannot_be_written_is_no_success(cache):
    from claire.testing.doubles import http_responder
    from claire.testing.mock_openai import MockOpenAIServer

    with MockOpenAIServer(http_responder()) as server:
        result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--no-report",
                            "--base-url", server.base_url, "--trace-out", "/dev/full", cache=cache)
    assert result.returncode == 2 and "cannot write --trace-out /dev/full" in result.stderr
