"""Batch-evaluation throughput against the local mock server (real HTTP, no model).

By default a tiny stand-in agent makes ``CALLS_PER_CLAIM`` sequential LLM calls per claim
through a real ``LLMClient``; ``system="claire"`` or ``"rav"`` runs the real system instead, on
the demo index (CLAIRE: search, finish, verify = 3 calls; rav: 1 call, reranking off), so the
figure includes real retrieval. Every answer takes ``latency`` seconds. Throughput at each concurrency is compared
with the ideal: every round of ``concurrency`` claims taking exactly (calls per claim, as the
server counted them) x ``latency``; the target is at least 0.8 of ideal at 16 with 200 ms answers
(the default), and ``--concurrency 64 --latency 2`` (real latency) reaches 0.9 through ChatOpenAI, the
measure that retired CLAIRE's own aiohttp chat model. Concurrency 1 is a reference rate, measured
over at most ``SERIAL_CLAIMS`` claims. Each concurrency
above 1 is measured ``repeat`` times, each run with a cold cache, and the median run is reported
beside all of them (a shared 2-core machine varies by several percent from run to run). A last run
over the warm LLM cache must make no server calls at all.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_system
from claire.llm.client import ChatClient
from claire.domain import Claim
from claire.config import Config
from claire.settings import LLMConfig
from claire.errors import ConfigError
from claire.bench.llm import ServerProcess
from claire.evals.runner import RunSummary, run_eval
from claire.testing.bench_models import CALLS_PER_CLAIM, TinyAgent, agent_answer, score_answer

CALLS = {"tiny": CALLS_PER_CLAIM, "claire": 3, "rav": 1}
TARGET_FRACTION = 0.8
SERIAL_CLAIMS = 16


def _claims(count: int) -> list[Claim]:
    return [
        Claim(claim_id=f"bench_{i:04d}", text=f"Synthetic claim {i}: the bridge opened in {1900 + i}.",
              label="inconsistent" if i % 2 else "consistent")
        for i in range(count)
    ]


async def _run_once(server: ServerProcess, claims: list[Claim], out_dir: Path, cache: Path, concurrency: int,
                    max_concurrency: int, system: str) -> tuple[RunSummary, int]:
    config = LLMConfig(model="bench-model", base_url=server.base_url, api_key="bench-key", cache=True,
                       cache_path=cache, max_concurrency=max_concurrency)
    client = ChatClient.from_config(config)
    before = server.calls
    try:
        if system == "tiny":
            summary = await run_eval(claims, TinyAgent(client), out_dir, concurrency=concurrency, show_progress=False)
        else:
            # the bench model ends its research with finish(), offered here (the paper preset has none)
            full = Config().with_overrides({"agent.system": system, "retrieval.rerank": False, "agent.finish_action": True})
            async with open_system(full, llm=client) as real:
                summary = await run_eval(claims, real, out_dir, concurrency=concurrency, show_progress=False)
    finally:
        await client.aclose()
    return summary, server.calls - before


async def _run(claims: int, latency: float, concurrencies: tuple[int, ...], system: str, repeat: int) -> dict[str, Any]:
    items = _claims(claims)
    calls_per_claim = CALLS[system]
    runs = []
    responder = score_answer if system == "tiny" else agent_answer
    with ServerProcess(responder, latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        top = max(concurrencies)
        for concurrency in concurrencies:
            measured = []
            # concurrency 1 is a reference rate, the same over any number of claims: at most SERIAL_CLAIMS of them
            # (at 2 s an answer, 128 claims one after another would take 13 minutes)
            subset = items if concurrency > 1 else items[:SERIAL_CLAIMS]
            for attempt in range(repeat if concurrency > 1 else 1):
                summary, calls = await _run_once(server, subset, root / f"run-c{concurrency}-{attempt}",
                                                 root / f"cache-c{concurrency}-{attempt}.sqlite", concurrency, top, system)
                # the ideal from the calls this run really made (a system may make more or fewer than planned)
                count = len(subset)
                ideal_s = math.ceil(count / concurrency) * (calls / count) * latency
                measured.append({
                    "concurrency": concurrency,
                    "claims": count,
                    "wall_s": summary.wall_time_s,
                    "claims_per_min": 60 * count / summary.wall_time_s,
                    "ideal_claims_per_min": 60 * count / ideal_s,
                    "fraction_of_ideal": ideal_s / summary.wall_time_s,
                    "server_calls": calls,
                    "errors": summary.errors,
                })
            middle = sorted(measured, key=lambda run: run["wall_s"])[len(measured) // 2]  # the median run
            runs.append({**middle, "runs": len(measured), "fractions": [run["fraction_of_ideal"] for run in measured]})
        warm, warm_calls = await _run_once(server, items, root / "run-warm", root / f"cache-c{top}-0.sqlite", top, top, system)
    return {
        "system": system,
        "claims": claims,
        "latency_s": latency,
        "calls_per_claim": calls_per_claim,
        "runs": runs,
        "target_fraction": TARGET_FRACTION,
        "warm_cache": {
            "concurrency": top,
            "wall_s": warm.wall_time_s,
            "claims_per_min": 60 * claims / warm.wall_time_s,
            "server_calls": warm_calls,
            "cached_calls": warm.metrics["usage"]["cached_calls"],
            "errors": warm.errors,
        },
    }


def run_eval_bench(
    *, claims: int = 48, latency: float = 0.2, concurrencies: tuple[int, ...] = (1, 16), system: str = "tiny",
    repeat: int = 3, console: Console | None = None,
) -> dict[str, Any]:
    """Benchmark batch evaluation throughput and the warm-cache re-run; prints a table and
    returns the figures (for each concurrency above 1 the median of ``repeat`` runs)."""
    if system not in CALLS:
        raise ConfigError(f"unknown bench system '{system}'; allowed: {', '.join(CALLS)}")
    if repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, got {repeat}")
    result = event_loop.run(_run(claims, latency, tuple(concurrencies), system, repeat))
    table = Table(title=f"Batch eval ({system}): {claims} claims x {result['calls_per_claim']} LLM calls, "
                        f"{latency * 1000:g} ms per answer")
    for column in ("Concurrency", "Wall", "Claims/min", "Ideal", "Of ideal", "Every run", "LLM calls", "Errors"):
        table.add_column(column, justify="left" if column == "Concurrency" else "right")
    top = max(concurrencies)
    for run in result["runs"]:
        mark = ("  ✓" if run["fraction_of_ideal"] >= TARGET_FRACTION else "  ✗") if run["concurrency"] == top else ""
        table.add_row(
            str(run["concurrency"]), f"{run['wall_s']:.2f} s", f"{run['claims_per_min']:.0f}",
            f"{run['ideal_claims_per_min']:.0f}", f"{run['fraction_of_ideal']:.2f}{mark}",
            " ".join(f"{fraction:.2f}" for fraction in run["fractions"]), str(run["server_calls"]), str(run["errors"]),
        )
    warm = result["warm_cache"]
    table.add_row(
        f"{top}, warm cache", f"{warm['wall_s']:.2f} s", f"{warm['claims_per_min']:.0f}", "", "", "",
        f"{warm['server_calls']} {'✓' if warm['server_calls'] == 0 else '✗'}", str(warm["errors"]),
    )
    table.caption = (f"Of ideal: the median of {repeat} cold-cache runs above concurrency 1. Target: at least "
                     f"{TARGET_FRACTION:g} of ideal at concurrency {top}; no server calls over a warm cache.")
    (console or Console()).print(table)
    return result
