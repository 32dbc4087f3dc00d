"""``claire bench serve``: the web app under a mock LLM with a fixed latency per call.

One article of ``facts`` facts is scanned through the real app (uvicorn on 127.0.0.1, the real
demo index, the CLAIRE agent with its two-sided report) at ``concurrency`` facts at a time; the
bench follows the scan's server-sent events and reports the time to the first checked (and so
highlightable) fact and to the finished scan, beside the ideal the LLM latency allows. Then
``clients`` concurrent clients poll the finished scan's status ``polls`` times each, as the page
and the extension do, and the bench reports the latency percentiles of those polls.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import multiprocessing

import httpx
from rich.console import Console
from rich.table import Table

from claire import event_loop


def _article(facts: int) -> tuple[str, list[str]]:
    sentences = [f"Landmark number {i} of the city was completed in {1800 + i} by the guild of builders." for i in range(facts)]
    return " ".join(sentences), sentences


def _responder(sentences: list[str]):
    from claire.testing.doubles import http_responder, kind_of

    base = http_responder()

    def respond(body):
        if kind_of(body) == "extract":
            return {"content": "\n".join(f"<fact>{s}</fact>" for s in sentences)}
        return base(body)

    return respond


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def _scan(url: str, text: str) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        start = time.perf_counter()
        job = (await client.post("/api/scan", json={"title": "Bench City", "text": text})).json()["id"]
        marks: dict[str, float] = {}
        kind = None
        async with client.stream("GET", f"/api/scan/{job}/events") as response:
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    kind = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    now = time.perf_counter() - start
                    if kind == "facts":
                        marks.setdefault("extracted", now)
                    elif kind == "fact":
                        marks.setdefault("first_fact", now)
                    elif kind == "end":
                        marks["finished"] = now
                        marks["status"] = json.loads(line.split(":", 1)[1])["status"] == "done"
                        break
        data = (await client.get(f"/api/scan/{job}")).json()
        marks["facts"] = data["progress"]["done"]
        marks["job"] = job  # type: ignore[assignment]
        return marks


async def _polls(url: str, path: str, clients: int, polls: int) -> tuple[list[float], float, int]:
    """``clients`` clients, each with its own keep-alive connection, polling ``path`` ``polls`` times."""
    latencies: list[float] = []
    errors = 0

    async def one_client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            await client.get("/api/health")  # connect first: the figures are for polls, not handshakes
            await ready.wait()
            for _ in range(polls):
                start = time.perf_counter()
                response = await client.get(path)
                latencies.append(time.perf_counter() - start)
                errors += response.status_code != 200

    ready = asyncio.Event()
    tasks = [asyncio.create_task(one_client()) for _ in range(clients)]
    await asyncio.sleep(0.5)
    start = time.perf_counter()
    ready.set()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - start, errors


def _polls_in_process(url: str, path: str, clients: int, polls: int) -> tuple[list[float], float, int]:
    """The pollers run in a process of their own, so they do not share the server's interpreter lock."""
    return event_loop.run(_polls(url, path, clients, polls))


def run_serve_bench(*, facts: int = 40, concurrency: int = 8, latency: float = 0.2, clients: int = 100, polls: int = 20,
                    console: Console | None = None, index_root: Path | None = None, retriever: Any = None) -> dict[str, float]:
    """Run the bench; ``retriever`` (an open one, left open) or ``index_root`` pick the demo index to use."""
    import claire.agent.registry  # noqa: F401  (its name checks)
    from claire.agent.runtime import open_retrieval
    from claire.config import load_config
    from claire.testing.mock_openai import MockOpenAIServer
    from claire.web.app import create_app
    from claire.web.settings import ServeSettings
    from claire.web.serve import ServerThread

    console = console or Console()
    text, sentences = _article(facts)
    polled: dict[str, tuple[list[float], float, int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="claire-bench-serve-") as tmp, \
            MockOpenAIServer(_responder(sentences), latency=latency) as llm:
        config = load_config(None, {"llm.base_url": llm.base_url, "llm.cache": False, "llm.api_key": "sk-bench",
                                    "agent.finish_action": True,  # the stand-in model finishes its research
                                    "llm.max_concurrency": max(concurrency, 8), "retrieval.rerank": False,
                                    **({"retrieval.path": str(index_root)} if index_root else {})})
        own_retriever = retriever is None
        if own_retriever:
            console.print("opening the demo index…")
            retriever = open_retrieval(config)
        try:
            settings = ServeSettings(data_dir=Path(tmp), concurrency=concurrency)
            with ServerThread(create_app(config, settings, retriever=retriever)) as server:
                scan = event_loop.run(_scan(server.url, text))
                calls = llm.calls
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    for view in ("summary", "full"):
                        path = f"/api/scan/{scan['job']}?view={view}"
                        size = len(httpx.get(server.url + path).content)
                        polled[view] = (*pool.apply(_polls_in_process, (server.url, path, clients, polls)), size)
        finally:
            if own_retriever:
                retriever.close()
    # the ideal: the extraction call, then each fact's calls one after another (measured: the
    # calls per fact depend on the settings, e.g. a preset that stops at the first report)
    per_fact = (calls - 1) / max(int(scan["facts"]), 1)
    ideal_first = latency * (1 + per_fact)
    ideal_total = latency * (1 + per_fact * math.ceil(facts / concurrency))
    results: dict[str, float] = {
        "first_fact_s": scan["first_fact"], "finished_s": scan["finished"], "extracted_s": scan["extracted"],
        "ideal_first_s": ideal_first, "ideal_finished_s": ideal_total, "llm_calls": calls, "facts": scan["facts"],
        "scan_ok": scan["status"],
    }
    table = Table(title=f"claire bench serve — {facts}-fact scan, concurrency {concurrency}, mock LLM {latency * 1000:.0f} ms/call",
                  title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("ideal / note", justify="right")
    table.add_row("facts extracted (SSE 'facts')", f"{scan['extracted']:.2f} s", f"{latency:.2f} s (1 call)")
    table.add_row("first highlighted fact (SSE 'fact')", f"{scan['first_fact']:.2f} s", f"{ideal_first:.2f} s")
    table.add_row(f"finished scan ({int(scan['facts'])} facts)", f"{scan['finished']:.2f} s",
                  f"{ideal_total:.2f} s ({calls} LLM calls)")
    for view, (latencies, wall, errors, size) in polled.items():
        p50, p95 = 1000 * statistics.median(latencies), 1000 * _percentile(latencies, 0.95)
        results.update({f"poll_{view}_p50_ms": p50, f"poll_{view}_p95_ms": p95, f"poll_{view}_rps": len(latencies) / wall,
                        f"poll_{view}_errors": errors, f"poll_{view}_count": len(latencies)})
        table.add_row(f"status poll, view={view} ({clients} clients)", f"p50 {p50:.0f} ms · p95 {p95:.0f} ms",
                      f"{len(latencies) / wall:.0f} polls/s, {size / 1024:.0f} KiB, {errors} errors")
    console.print(table)
    return results
