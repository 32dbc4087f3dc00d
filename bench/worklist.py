"""The corpus run, measured: a worklist of the demo corpus's seven articles with planted errors,
against the oracle behind a local server in a process of its own (real HTTP) whose every answer
takes ``latency`` seconds, on the demo index. It reports facts checked per second, LLM calls per
fact, and the corpus machinery's overhead: the corpus run's seconds per LLM call against the
executor alone checking the same facts (``run_eval``, the index and the model opened as any run
opens them) at the same concurrency, measured in the same process. The target is an overhead of at most 10%.

With ``engines``, the same corpus run on each engine instead: the local one, and the Ray engine
with 1 and 2 worker processes on a local Ray (:func:`run_engine_bench`), each engine's facts per
second against the local engine's, measured in the same run. On one machine the Ray engine should
keep at least 0.8 of the local throughput; its gain is across machines.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_retrieval, open_system, run_settings
from claire.bench.llm import ServerProcess
from claire.config import Config
from claire.evals.runner import run_eval
from claire.jobs.worklist import run_worklist
from claire.llm.client import ChatClient
from claire.testing.oracle import oracle_answer

TITLES = ["Paris", "The Beatles", "Neil Armstrong", "Nobel Prize in Physics", "Edwin Hubble", "John Williams",
          "Amazon River"]
TARGET_OVERHEAD = 0.10
TARGET_RAY_SHARE = 0.8


async def _one(latency: float, concurrency: int, titles: list[str] | None = TITLES) -> dict[str, Any]:
    with ServerProcess(oracle_answer, latency=latency, model="oracle") as server, tempfile.TemporaryDirectory() as tmp:
        config = Config().with_overrides({
            "llm.base_url": server.base_url, "llm.api_key": "bench-key", "llm.model": "oracle", "llm.cache": False,
            "llm.max_concurrency": 4 * concurrency, "eval.concurrency": concurrency, "retrieval.rerank": False,
            "agent.finish_action": True,  # the oracle finishes its research when it may
        })
        open_retrieval(config).close()  # the embedder loaded once, so both runs below open it warm
        before = server.calls
        result = await run_worklist(config=config, out_dir=Path(tmp) / "worklist", titles=titles, show_progress=False)
        corpus_calls = server.calls - before
        started = time.perf_counter()  # the executor alone opens the index and the model too, as a run does
        retriever = open_retrieval(config)
        llm = ChatClient.from_config(config.llm)
        try:
            async with open_system(config, llm=llm, retriever=retriever) as system:
                before = server.calls
                await run_eval(result.claims, system, Path(tmp) / "alone", concurrency=concurrency,
                               config_public=run_settings(config), show_progress=False)
                alone_calls = server.calls - before
        finally:
            retriever.close()
            await llm.aclose()
        alone_s = time.perf_counter() - started
    facts = len(result.claims)
    per_call_corpus = result.wall_s / max(corpus_calls, 1)
    per_call_alone = alone_s / max(alone_calls, 1)
    return {"latency_s": latency, "concurrency": concurrency, "articles": len(result.articles), "facts": facts,
            "entries": len(result.entries), "wall_s": result.wall_s, "facts_per_s": facts / result.wall_s,
            "calls": corpus_calls, "calls_per_fact": corpus_calls / max(facts, 1),
            "alone_wall_s": alone_s, "alone_calls": alone_calls,
            "overhead": per_call_corpus / per_call_alone - 1.0}


def run_worklist_bench(*, latencies: tuple[float, ...] = (0.2, 2.0), concurrency: int = 32, all_articles: bool = False,
                       console: Console | None = None) -> list[dict[str, Any]]:
    """Measure the corpus run at each latency (on the seven articles with planted errors, or with
    ``all_articles`` every article of the demo index) and print the table."""
    rows = []
    for latency in latencies:
        started = time.perf_counter()
        rows.append(event_loop.run(_one(latency, concurrency, None if all_articles else TITLES)))
        rows[-1]["bench_s"] = time.perf_counter() - started
    articles = rows[0]["articles"] if rows else len(TITLES)
    table = Table(title=f"claire worklist on {articles} demo articles, oracle over HTTP, concurrency {concurrency}")
    for column in ("Answer", "Facts", "Entries", "Wall", "Facts/s", "Calls/fact", "Executor alone", "Overhead"):
        table.add_column(column, justify="right")
    for row in rows:
        mark = "✓" if row["overhead"] <= TARGET_OVERHEAD else "✗"
        table.add_row(f"{row['latency_s'] * 1000:.0f} ms", str(row["facts"]), str(row["entries"]), f"{row['wall_s']:.1f} s",
                      f"{row['facts_per_s']:.2f}", f"{row['calls_per_fact']:.2f}",
                      f"{row['alone_wall_s']:.1f} s ({row['alone_calls']} calls)", f"{row['overhead']:+.0%} {mark}")
    (console or Console()).print(table)
    (console or Console()).print("Overhead: the corpus run's seconds per LLM call (extraction, checks, naming each "
                                 "conflict, resolving) against the executor alone checking the same facts; target "
                                 f"at most {TARGET_OVERHEAD:.0%}.", style="dim")
    return rows


async def _engine(latency: float, concurrency: int, engine: str, workers: int,
                  titles: list[str] | None = TITLES) -> dict[str, Any]:
    with ServerProcess(oracle_answer, latency=latency, model="oracle") as server, tempfile.TemporaryDirectory() as tmp:
        config = Config().with_overrides({
            "llm.base_url": server.base_url, "llm.api_key": "bench-key", "llm.model": "oracle", "llm.cache": False,
            "llm.max_concurrency": 4 * concurrency, "eval.concurrency": concurrency, "retrieval.rerank": False,
            "agent.finish_action": True, "eval.engine": engine, "eval.ray_workers": workers,
        })
        open_retrieval(config).close()  # the embedder loaded once before the clock starts
        result = await run_worklist(config=config, out_dir=Path(tmp) / "worklist", titles=titles, show_progress=False)
        calls = server.calls
    return {"engine": engine if engine == "local" else f"ray, {workers} worker{'s' if workers > 1 else ''}",
            "facts": len(result.claims), "entries": len(result.entries), "wall_s": result.wall_s,
            "facts_per_s": len(result.claims) / result.wall_s, "calls": calls, "start_s": result.engine_start_s}


def run_engine_bench(*, latency: float = 0.2, concurrency: int = 32, workers: tuple[int, ...] = (1, 2),
                     all_articles: bool = False, console: Console | None = None) -> list[dict[str, Any]]:
    """The corpus run on the local engine and on the Ray engine with each number of ``workers``
    (a local Ray, started and stopped for each), and each one's throughput against the local one's."""
    titles = None if all_articles else TITLES
    rows = [event_loop.run(_engine(latency, concurrency, "local", 1, titles))]
    for count in workers:
        rows.append(event_loop.run(_engine(latency, concurrency, "ray", count, titles)))
    for row in rows:
        row["share"] = row["facts_per_s"] / rows[0]["facts_per_s"]
        ready = row["wall_s"] - (row["start_s"] or 0.0)  # the time the workers were up
        row["ready_share"] = row["facts"] / ready / rows[0]["facts_per_s"] if ready > 0 else None
    table = Table(title=f"claire worklist on {'every' if all_articles else len(TITLES)} demo articles by engine, "
                        f"{latency * 1000:.0f} ms answers, "
                        f"concurrency {concurrency}")
    for column in ("Engine", "Facts", "Entries", "Wall", "Workers ready", "Facts/s", "Of local", "Once ready"):
        table.add_column(column, justify="right")
    for row in rows:
        mark = "" if row["engine"] == "local" else (" ✓" if row["share"] >= TARGET_RAY_SHARE else " ✗")
        ready = "—" if row["start_s"] is None else f"{row['start_s']:.1f} s"
        table.add_row(row["engine"], str(row["facts"]), str(row["entries"]), f"{row['wall_s']:.1f} s", ready,
                      f"{row['facts_per_s']:.2f}", f"{row['share']:.2f}{mark}",
                      "—" if row["start_s"] is None else f"{row['ready_share']:.2f}")
    (console or Console()).print(table)
    (console or Console()).print(f"Ray on one machine: target at least {TARGET_RAY_SHARE:.1f} of the local engine's "
                                 "facts per second. The wall time includes starting Ray and its workers, overlapped "
                                 "with the driver opening its index; 'workers ready': when every actor had opened its "
                                 "system; 'once ready': the facts per second over the time the workers were up, "
                                 "against the local engine's.", style="dim")
    return rows
