"""The batch runner and its run directory: one line per claim, resuming after crashes (torn lines,
kill -9), retrying errors, bounded concurrency, no secrets on disk, thresholds from a dev run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claire.domain import Claim
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.evals.predictions import load_predictions
from claire.testing.fake_system import FakeSystem
from claire.evals.runner import run_eval

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
COMPARED = ("auroc", "auroc_ci95", "accuracy", "precision", "recall", "f1", "confusion", "recall_by_type", "counts")


@pytest.fixture
def claims() -> list[Claim]:
    return load_wikicollide(FIXTURE)


def lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def run(claims, system, out, **kwargs):
    kwargs.setdefault("show_progress", False)
    return asyncio.run(run_eval(claims, system, out, **kwargs))


def same_metrics(a: dict, b: dict) -> None:
    assert {k: a[k] for k in COMPARED} == {k: b[k] for k in COMPARED}


KILLED_RUN = """
import asyncio, sys
from pathlib import Path
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.evals.runner import run_eval
from claire.testing.fake_system import FakeSystem
claims = load_wikicollide(sys.argv[1])
asyncio.run(run_eval(claims, FakeSystem(delay=0.3), Path(sys.argv[2]), concurrency=2, show_progress=False))
"""


def test_kill_9_mid_run_then_resume(tmp_path, claims):
    clean = run(claims, FakeSystem(), tmp_path / "clean")
    out = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(FIXTURE), str(out)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = out / "predictions.jsonl"
            if path.exists() and path.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    done_before = len(load_predictions(out))
    assert 3 <= done_before < 10
    system = FakeSystem()
    resumed = run(claims, system, out)
    assert len(system.calls) == 10 - done_before
    rows = lines(out)
    assert len(rows) == 10 and len({r["claim_id"] for r in rows}) == 10
    same_metrics(resumed.metrics, clean.metrics)


