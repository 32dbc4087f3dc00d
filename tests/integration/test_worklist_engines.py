"""The corpus run on Ray, with the oracle behind a real OpenAI-compatible server on 127.0.0.1 and
the real demo index. On a local Ray started by the test (two CPUs) the Ray engine lists the same
entries with the same decisions as the local engine; an actor's process killed in the middle of the
checks is restarted and its facts checked again, with no entry twice and no article missing; a
driver killed with ``kill -9`` and started again resumes and lists nothing twice (the local engine's
is in test_worklist.py). They skip when Ray is not installed (pip install -e ".[ray]")."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from claire.config import load_config
from claire.testing.cli import run_claire
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.oracle import KEY, oracle_responder

try:
    import ray  # noqa: F401
except ImportError:
    ray = None
needs_ray = pytest.mark.skipif(ray is None, reason="the Ray engine needs the ray extra (pip install -e \".[ray]\")")

ARTICLES = ["Paris", "The Beatles"]


@pytest.fixture(scope="module")
def oracle():
    with MockOpenAIServer(oracle_responder(), model="oracle") as server:
        yield server


def config_for(oracle, root: Path, tmp_path: Path, **more):
    return load_config(None, {"llm.base_url": oracle.base_url, "llm.model": "oracle", "llm.api_key": "sk-ray",
                              "llm.cache_path": str(tmp_path / "llm-cache.sqlite"), "retrieval.path": str(root),
                              "retrieval.rerank": False, "eval.concurrency": 8, **more})


def decisions(run) -> dict[str, tuple[str | None, str | None]]:
    return {entry.id: (entry.decision, entry.should_change) for entry in run.entries}


def ray_workers() -> list[int]:
    """The process ids of the Ray actors now running (Linux: their command lines name the class)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"ray::Worker" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@needs_ray
def test_the_ray_engine_lists_what_the_local_engine_lists_even_when_a_worker_dies(oracle, tmp_path, copy_demo_index):
    from claire.jobs.worklist import run_worklist

    root = copy_demo_index(tmp_path / "indexes")
    local = asyncio.run(run_worklist(config=config_for(oracle, root, tmp_path / "local"), out_dir=tmp_path / "local",
                                     titles=ARTICLES, show_progress=False))
    assert len(local.entries) == 2  # Paris and The Beatles each hold one planted error

    async def on_ray(slow: MockOpenAIServer) -> object:
        run = asyncio.create_task(run_worklist(
            config=config_for(slow, root, tmp_path / "ray", **{"eval.engine": "ray", "eval.ray_workers": 2}),
            out_dir=tmp_path / "ray", titles=ARTICLES, show_progress=False))
        checks = tmp_path / "ray" / "checks" / "predictions.jsonl"
        killed = None
        deadline = time.monotonic() + 180
        while not run.done() and time.monotonic() < deadline:
            lines = checks.read_text().count("\n") if checks.exists() else 0
            if killed is None and lines >= 3 and ray_workers():
                killed = ray_workers()[0]
                os.kill(killed, signal.SIGKILL)  # in the middle of the checks: Ray restarts it, its calls run again
            await asyncio.sleep(0.2)
        assert killed is not None, "the checks ended before a worker could be killed"
        return await run

    with MockOpenAIServer(oracle_responder(), model="oracle", latency=0.05) as slow:  # the checks last long enough to be hit
        ray_run = asyncio.run(on_ray(slow))
    assert decisions(ray_run) == decisions(local)  # the same entries, the same decisions; only the order may differ
    assert ray_run.facts == local.facts and ray_run.articles == local.articles
    lines = [json.loads(line) for line in (tmp_path / "ray" / "checks" / "predictions.jsonl").read_text().splitlines()]
    ids = [line["claim_id"] for line in lines]
    assert len(ids) == len(set(ids)) == local.facts  # no fact checked into the run twice, none missing
    assert {line["claim_id"] for line in lines} == {c.claim_id for c in local.claims}
    summary = json.loads((tmp_path / "ray" / "worklist_run.json").read_text())
    assert summary["engine"] == "ray" and summary["usage"]["calls"] > 0  # the workers' calls are counted here


@needs_ray
def test_a_driver_killed_with_kill_9_resumes_on_ray_and_lists_nothing_twice(oracle, tmp_path, copy_demo_index):
    import subprocess
    import sys

    copy_demo_index(tmp_path / "indexes")
    titles = tmp_path / "titles.txt"
    titles.write_text("\n".join(ARTICLES) + "\n")
    out = tmp_path / "wl"
    args = ["worklist", "--titles", str(titles), "--out", str(out), "--key", str(KEY), "--engine", "ray",
            "--ray-workers", "1", "--base-url", oracle.base_url, "--model", "oracle", "--set", "retrieval.rerank=false"]
    env = {**os.environ, "CLAIRE_CACHE_DIR": str(tmp_path), "CLAIRE_DATA_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-ray"}
    driver = subprocess.Popen([sys.executable, "-m", "claire.cli", *args], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    checks = out / "checks" / "predictions.jsonl"
    deadline = time.monotonic() + 180
    while driver.poll() is None and time.monotonic() < deadline:
        if checks.exists() and checks.read_text().count("\n") >= 2:
            os.killpg(driver.pid, signal.SIGKILL)  # the driver and the Ray it started, at once
            break
        time.sleep(0.1)
    driver.wait(timeout=60)
    assert driver.returncode == -signal.SIGKILL, "the run ended before the driver could be killed"
    done = checks.read_text().count("\n")
    calls = oracle.calls
    again = run_claire(*args, cache=tmp_path, env={"OPENAI_API_KEY": "sk-ray"})
    assert again.returncode == 1, again.stderr
    metrics = json.loads((out / "worklist_metrics.json").read_text())
    assert (metrics["found"], metrics["not_planted"], metrics["duplicates"]) == (len(ARTICLES), 0, 0)
    ids = [json.loads(line)["claim_id"] for line in checks.read_text().splitlines()]
    assert len(ids) == len(set(ids)) and len(ids) > done
    assert oracle.calls > calls  # the rest was checked, the finished part read back


@needs_ray
def test_the_ray_engine_checks_across_editions_as_the_local_engine_does(oracle, tmp_path, multilingual_index_root):
    """The corpus run over the multilingual demo's French and German articles on two Ray actors:
    the actors search the other editions as the driver's configuration says, and the worklist
    scores as the local engine's does."""
    import shutil

    from claire.indexes.retriever import MULTILINGUAL_DEMO
    from claire.jobs.worklist import run_worklist
    from claire.resolving.worklist import load_key, score_worklist
    from claire.testing.oracle import EDITIONS_KEY

    root = tmp_path / "indexes"
    shutil.copytree(multilingual_index_root, root)
    titles = (Path(__file__).resolve().parents[2] / "docs" / "examples" / "worklist_titles_editions.txt").read_text().split("\n")
    config = config_for(oracle, root, tmp_path, **{"eval.engine": "ray", "eval.ray_workers": 2,
                                                   "retrieval.index": MULTILINGUAL_DEMO, "retrieval.languages": ["en"]})
    run = asyncio.run(run_worklist(config=config, out_dir=tmp_path / "ray", titles=titles, show_progress=False))
    score = score_worklist(run.entries, load_key(EDITIONS_KEY))
    assert (score["found"], score["not_planted"], score["right_side"], score["duplicates"]) == (4, 0, 4, 0), score
    assert all(any(side.translation for side in entry.sides) for entry in run.entries)
    assert json.loads((tmp_path / "ray" / "worklist_run.json").read_text())["infoboxes"]["differs"] == 3
