"""Which side is right, measured: LLM calls and seconds per resolve on the shipped cases
(``evals/data/sides_cases.jsonl``), over the local mock server (real HTTP, in a process of its own)
answering as the oracle does after ``latency`` seconds an answer. A figure of the resolver's cost
and plumbing; the decisions' accuracy with the oracle is the sides evaluation's."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_system
from claire.bench.llm import ServerProcess
from claire.config import Config
from claire.settings import LLMConfig
from claire.evals.runner import run_eval
from claire.llm.client import ChatClient
from claire.tasks.registry import get_task
from claire.tasks.sides.records import load_cases
from claire.testing.oracle import oracle_answer

CASES = Path(__file__).resolve().parents[1] / "evals" / "data" / "sides_cases.jsonl"


async def _run(latency: float, concurrency: int) -> dict[str, Any]:
    cases = load_cases(CASES)
    with ServerProcess(oracle_answer, latency=latency, model="oracle") as server, tempfile.TemporaryDirectory() as tmp:
        llm = ChatClient.from_config(LLMConfig(model="oracle", base_url=server.base_url, api_key="bench-key", cache=False,
                                               max_concurrency=16))
        config = Config().with_overrides({"agent.system": "resolve", "agent.task": "sides", "retrieval.rerank": False})
        try:
            async with open_system(config, llm=llm) as resolver:
                summary = await run_eval(cases, resolver, Path(tmp) / "sides", task=get_task("sides"),
                                         concurrency=concurrency, show_progress=False)
        finally:
            await llm.aclose()
    metrics = summary.metrics
    return {"cases": len(cases), "calls": metrics["llm_calls_per_case"], "seconds": metrics["seconds_per_case"],
            "accuracy": metrics["accuracy_with_winner"], "errors": summary.errors, "wall": summary.wall_time_s}


def run_resolve_bench(*, latency: float = 0.2, concurrency: int = 1, console: Console | None = None) -> dict[str, Any]:
    """Resolve every shipped case; print a table and return the figures."""
    figures = event_loop.run(_run(latency, concurrency))
    table = Table(title=f"claire resolve on the {figures['cases']} shipped cases: mock oracle at "
                        f"{latency * 1000:g} ms an answer, {concurrency} case(s) at once")
    for column in ("LLM calls / resolve", "s / resolve", "calls' time if sequential", "Right side named*", "Errors"):
        table.add_column(column, justify="right")
    table.add_row(f"{figures['calls']:.2f}", f"{figures['seconds']:.2f}", f"{figures['calls'] * latency:.2f} s",
                  f"{100 * (figures['accuracy'] or 0):.0f}%", str(figures["errors"]))
    table.caption = ("*with the oracle standing in for the model: plumbing and the rule, not a model's judgement. "
                     "Each side's sources are judged at once, so a resolve takes about two answers' time.")
    (console or Console()).print(table)
    return figures
