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

import httpx
from rich.console import Console
from rich.table import Table

from claire.agent.runtime import open_retrieval
from claire.config import load_config
from claire.testing.doubles import http_responder, kind_of
from claire.testing.mock_openai import MockOpenAIServer
from claire.web.app import ServeSettings, create_app
from claire.web.serve import ServerThread

CALLS_PER_FACT = 5  # controller (search), controller (report), verifier, two-sided report x2


def _article(facts: int) -> tuple[str, list[str]]:
    sentences = [f"Landmark number {i} of the city was completed in {1800 + i} by the guild of builders." for i in range(facts)]
    return " ".join(sentences), sentences


def _responder(sentences: list[str]):
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


async def _polls(url: str, job: str, clients: int, polls: int) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        async def one_client() -> None:
            nonlocal errors
            for _ in range(polls):
                start = time.perf_counter()
                response = await client.get(f"/api/scan/{job}")
                latencies.append(time.perf_counter() - start)
                errors += response.status_code != 200

        start = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        return latencies, time.perf_counter() - start, errors


def run_serve_bench(*, facts: int = 40, concurrency: int = 8, latency: float = 0.2, clients: int = 100, polls: int = 20,
                    console: Console | None = None) -> dict[str, float]:
    console = console or Console()
    text, sentences = _article(facts)
    with tempfile.TemporaryDirectory(prefix="claire-bench-serve-") as tmp, \
            MockOpenAIServer(_responder(sentences), latency=latency) as llm:
        config = load_config(None, {"llm.base_url": llm.base_url, "llm.cache": False, "llm.api_key": "sk-bench",
                                    "llm.max_concurrency": max(concurrency, 8), "retrieval.rerank": False})
        console.print("opening the demo index…")
        retriever = open_retrieval(config)
        try:
            settings = ServeSettings(data_dir=Path(tmp), concurrency=concurrency)
            with ServerThread(create_app(config, settings, retriever=retriever)) as server:
                scan = asyncio.run(_scan(server.url, text))
                calls = llm.calls
                latencies, wall, errors = asyncio.run(_polls(server.url, str(scan["job"]), clients, polls))
                size = len(httpx.get(f"{server.url}/api/scan/{scan['job']}").content)
        finally:
            retriever.close()
    ideal_first = latency * (1 + CALLS_PER_FACT)
    ideal_total = latency * (1 + CALLS_PER_FACT * math.ceil(facts / concurrency))
    results = {
        "first_fact_s": scan["first_fact"], "finished_s": scan["finished"], "extracted_s": scan["extracted"],
        "ideal_first_s": ideal_first, "ideal_finished_s": ideal_total, "llm_calls": calls,
        "poll_p50_ms": 1000 * statistics.median(latencies), "poll_p95_ms": 1000 * _percentile(latencies, 0.95),
        "poll_rps": len(latencies) / wall, "poll_errors": errors, "poll_bytes": size,
    }
    table = Table(title=f"claire bench serve — {facts}-fact scan, concurrency {concurrency}, mock LLM {latency * 1000:.0f} ms/call",
                  title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("ideal / note", justify="right")
    table.add_row("facts extracted (first SSE 'facts')", f"{scan['extracted']:.2f} s", f"{latency:.2f} s (1 call)")
    table.add_row("first highlighted fact", f"{scan['first_fact']:.2f} s", f"{ideal_first:.2f} s")
    table.add_row(f"finished scan ({int(scan['facts'])} facts)", f"{scan['finished']:.2f} s",
                  f"{ideal_total:.2f} s ({calls} LLM calls)")
    table.add_row(f"status poll p50 ({clients} clients)", f"{results['poll_p50_ms']:.1f} ms", f"{size / 1024:.0f} KiB per answer")
    table.add_row(f"status poll p95 ({clients} clients)", f"{results['poll_p95_ms']:.1f} ms",
                  f"{results['poll_rps']:.0f} polls/s, {errors} errors")
    console.print(table)
    return results
