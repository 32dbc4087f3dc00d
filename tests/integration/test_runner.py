"""The batch runner killed with kill -9 in another process, then resumed: no claim lost or run
twice, and the same metrics as a clean run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from claire.runs.predictions import load_predictions
from claire.testing.fake_system import FakeSystem
from claire.evals.runner import run_eval

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
# the metrics of what was scored, not its cost or time (the resumed run did less work)
COMPARED = ("auroc", "auroc_ci95", "accuracy", "precision", "recall", "f1", "confusion", "recall_by_type", "counts")


KILLED_RUN = """
import asyncio, sys
from pathlib import Path
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.evals.runner import run_eval
from claire.testing.fake_system import FakeSystem
claims = load_wikicollide(sys.argv[1])
asyncio.run(run_eval(claims, FakeSystem(delay=0.3), Path(sys.argv[2]), concurrency=2, show_progress=False))
"""


def test_kill_9_mid_run_then_resume(tmp_path, mini_claims):
    clean = asyncio.run(run_eval(mini_claims, FakeSystem(), tmp_path / "clean", show_progress=False))
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
    resumed = asyncio.run(run_eval(mini_claims, system, out, show_progress=False))
    assert len(system.calls) == 10 - done_before
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 10 and len({r["claim_id"] for r in rows}) == 10
    assert {k: resumed.metrics[k] for k in COMPARED} == {k: clean.metrics[k] for k in COMPARED}


