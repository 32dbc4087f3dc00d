"""LLM-layer benchmark against the local mock server (real HTTP, no model).

Measures what ``ChatClient.ainvoke`` adds per call over a raw httpx POST of the same request
(target: p50 overhead under 5 ms), split into what langchain-openai's ``ChatOpenAI`` (the chat
model of every OpenAI-compatible endpoint) costs on its own and what CLAIRE's client adds around
it; how calls/s scale from concurrency 1 to 32 when every answer takes 100 ms (target: at least
20x); how fast a cache hit is; and the CPU each call costs the event loop with 16 verifier-sized
requests in flight.
The server runs in a child process (:class:`ServerProcess`), as a real endpoint would, so its work
is not billed to the client; ``bench_eval`` uses it too.
"""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from rich.console import Console
from rich.table import Table

from claire import event_loop
from langchain_core.messages import HumanMessage

from claire.llm.client import ChatClient
from claire.settings import LLMConfig
from claire.errors import ClaireError
from claire.testing.mock_openai import MockOpenAIServer, Responder

MODEL = "bench-model"
SLOW_LATENCY = 0.1
CONCURRENCY = 32
WARMUP = 5
TARGET_OVERHEAD_MS = 5.0
TARGET_SPEEDUP = 20.0


def serve(responder: str, latency: float, model: str) -> None:
    """The child side of :class:`ServerProcess`: a MockOpenAIServer driven by lines on stdin
    (``calls`` or ``latency SECONDS``; each answered with the request count so far)."""
    function = None
    if responder:
        module, _, name = responder.partition(":")
        function = getattr(importlib.import_module(module), name)
    with MockOpenAIServer(function, latency=latency, model=model) as server:
        print(server.port, flush=True)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "latency":
                server.latency = float(args[0])
            print(server.calls, flush=True)


class ServerProcess:
    """A :class:`MockOpenAIServer` in a child process, as a real endpoint is: in-process, its request
    handling would share the client's GIL and be billed to the client. ``responder`` must be a
    module-level function (it is imported by name in the child)."""

    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0, model: str = "mock-model"):
        name = f"{responder.__module__}:{responder.__qualname__}" if responder else ""
        self._args = [name, str(latency), model]
        self.port = 0

    def __enter__(self) -> "ServerProcess":
        code = "import sys; from claire.bench.llm import serve; serve(sys.argv[1], float(sys.argv[2]), sys.argv[3])"
        self._process = subprocess.Popen(
            [sys.executable, "-c", code, *self._args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        line = self._process.stdout.readline()  # type: ignore[union-attr]
        if not line.strip().isdigit():
            self._process.kill()
            raise ClaireError(f"the benchmark's mock server did not start (it said {line!r})")
        self.port = int(line)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._process.stdin.close()  # type: ignore[union-attr]
        self._process.wait(timeout=10)

    def _ask(self, command: str) -> int:
        self._process.stdin.write(command + "\n")  # type: ignore[union-attr]
        self._process.stdin.flush()  # type: ignore[union-attr]
        answer = self._process.stdout.readline()  # type: ignore[union-attr]
        if not answer:
            raise ClaireError("the benchmark's mock server process stopped unexpectedly")
        return int(answer)

    @property
    def base_url(self) -> str:
        """The mock server's OpenAI base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def calls(self) -> int:
        """Requests the server has received so far."""
        return self._ask("calls")

    def set_latency(self, seconds: float) -> None:
        """Make every answer take this many seconds."""
        self._ask(f"latency {seconds}")


CPU_CONCURRENCY = 16
VERIFIER_TEXT = "A passage of a Wikipedia article about a tower, its height and the year it was finished. " * 120


def _text(tag: str, i: int) -> str:
    return f"{tag} request {i}: is the Eiffel Tower 330 metres tall?"


def _messages(tag: str, i: int) -> list[HumanMessage]:
    return [HumanMessage(_text(tag, i))]


def _ms(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50) * 1000), float(np.percentile(samples, 95) * 1000)


async def _timed(call: Any) -> float:
    start = time.perf_counter()
    await call
    return time.perf_counter() - start


async def _overhead(server: ServerProcess, client: ChatClient, calls: int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server.base_url, headers={"Authorization": "Bearer bench-key"}) as http:

        async def raw(text: str) -> None:
            body = {"model": MODEL, "messages": [{"role": "user", "content": text}], "temperature": 0.0,
                    "max_tokens": client.max_tokens}
            response = await http.post("/chat/completions", json=body)
            response.raise_for_status()
            response.json()

        before = server.calls
        for i in range(WARMUP):
            await raw(_text("warm-raw", i))
            await client.model.ainvoke(_messages("warm-model", i))
            await client.ainvoke(_messages("warm-client", i))
        raw_times, model_times, client_times = [], [], []
        for i in range(calls):  # interleaved so drift affects all alike
            raw_times.append(await _timed(raw(_text("raw", i))))
            model_times.append(await _timed(client.model.ainvoke(_messages("model", i))))
            client_times.append(await _timed(client.ainvoke(_messages("client", i))))
        server_calls = server.calls - before
    raw_p50, raw_p95 = _ms(raw_times)
    model_p50, model_p95 = _ms(model_times)
    client_p50, client_p95 = _ms(client_times)
    return {
        "raw_p50_ms": raw_p50,
        "raw_p95_ms": raw_p95,
        "model_p50_ms": model_p50,  # the library's chat model called bare
        "model_p95_ms": model_p95,
        "client_p50_ms": client_p50,
        "client_p95_ms": client_p95,
        "overhead_p50_ms": client_p50 - raw_p50,
        "overhead_p95_ms": client_p95 - raw_p95,
        "library_p50_ms": model_p50 - raw_p50,  # what the chat model adds over the POST
        "ours_p50_ms": client_p50 - model_p50,  # what ChatClient adds around the chat model
        "server_calls": server_calls,  # every timed call reached the server (nothing answered from a cache)
        "target_p50_ms": TARGET_OVERHEAD_MS,
        "ok": client_p50 - raw_p50 < TARGET_OVERHEAD_MS,
    }


async def _scaling(server: ServerProcess, client: ChatClient, calls: int) -> dict[str, Any]:
    server.set_latency(SLOW_LATENCY)
    sequential = max(calls // 15, 5)
    start = time.perf_counter()
    for i in range(sequential):
        await client.ainvoke(_messages("sequential", i))
    rate_1 = sequential / (time.perf_counter() - start)
    # Open the connection pool first: steady-state throughput, not TCP set-up, is measured.
    await asyncio.gather(*(client.ainvoke(_messages("connect", i)) for i in range(CONCURRENCY)))
    start = time.perf_counter()
    await asyncio.gather(*(client.ainvoke(_messages("parallel", i)) for i in range(calls)))  # the client caps at 32
    rate_32 = calls / (time.perf_counter() - start)
    server.set_latency(0.0)
    return {
        "latency_s": SLOW_LATENCY,
        "calls_c1": sequential,
        "calls_per_s_c1": rate_1,
        "calls_c32": calls,
        "calls_per_s_c32": rate_32,
        "speedup": rate_32 / rate_1,
        "target_speedup": TARGET_SPEEDUP,
        "ok": rate_32 / rate_1 >= TARGET_SPEEDUP,
    }


async def _cpu_per_call(client: ChatClient, calls: int) -> float:
    """Milliseconds of this process's CPU per call with ``CPU_CONCURRENCY`` verifier-sized calls in flight."""
    semaphore = asyncio.Semaphore(CPU_CONCURRENCY)

    async def one(i: int) -> None:
        async with semaphore:
            await client.ainvoke([HumanMessage(f"{VERIFIER_TEXT} ({i})")])

    await asyncio.gather(*(one(-i - 1) for i in range(CPU_CONCURRENCY)))  # connections opened first
    start = time.process_time()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return 1000 * (time.process_time() - start) / calls


async def _cache_hits(server: ServerProcess, config: LLMConfig, calls: int, cache_path: Path) -> dict[str, Any]:
    client = ChatClient.from_config(config.model_copy(update={"cache": True, "cache_path": cache_path}))
    try:
        for i in range(calls):
            await client.ainvoke(_messages("cached", i))
        before = server.calls
        times = [await _timed(client.ainvoke(_messages("cached", i))) for i in range(calls)]
        p50, p95 = _ms(times)
        return {"p50_ms": p50, "p95_ms": p95, "server_calls": server.calls - before}
    finally:
        await client.aclose()


async def _run(calls: int) -> dict[str, Any]:
    with ServerProcess(model=MODEL) as server, tempfile.TemporaryDirectory() as tmp:
        config = LLMConfig(model=MODEL, base_url=server.base_url, api_key="bench-key", cache=False,
                           max_concurrency=CONCURRENCY)
        client = ChatClient.from_config(config)
        try:
            figures: dict[str, Any] = {
                "calls": calls,
                "model": type(client.model).__name__,
                "overhead": await _overhead(server, client, calls),
                "scaling": await _scaling(server, client, calls),
                "cpu_ms_per_call": await _cpu_per_call(client, calls),
            }
        finally:
            await client.aclose()
        figures["cache_hit"] = await _cache_hits(server, config, calls, Path(tmp) / "cache.sqlite")
    return figures


def run_llm_bench(*, calls: int = 300, console: Console | None = None) -> dict[str, Any]:
    """Benchmark the LLM client layer; prints a table and returns the figures."""
    result = event_loop.run(_run(calls))
    o, s, c = result["overhead"], result["scaling"], result["cache_hit"]
    table = Table(title=f"LLM layer vs the local mock server ({calls} calls per measure, {result['model']})")
    table.add_column("Measure", justify="left")
    table.add_column("Figure", justify="right")
    table.add_column("Target", justify="right")
    table.add_row("raw httpx POST p50 / p95", f"{o['raw_p50_ms']:.2f} / {o['raw_p95_ms']:.2f} ms", "")
    table.add_row(f"{result['model']}.ainvoke p50 / p95", f"{o['model_p50_ms']:.2f} / {o['model_p95_ms']:.2f} ms", "")
    table.add_row("ChatClient.ainvoke p50 / p95", f"{o['client_p50_ms']:.2f} / {o['client_p95_ms']:.2f} ms", "")
    table.add_row("overhead p50 / p95", f"{o['overhead_p50_ms']:.2f} / {o['overhead_p95_ms']:.2f} ms"
                  + (" ✓" if o["ok"] else " ✗"), f"p50 < {TARGET_OVERHEAD_MS:g} ms")
    table.add_row("  of which the chat model / ChatClient (p50)", f"{o['library_p50_ms']:.2f} / {o['ours_p50_ms']:.2f} ms", "")
    table.add_row(f"calls/s, concurrency 1 ({SLOW_LATENCY * 1000:g} ms per answer)", f"{s['calls_per_s_c1']:.1f}", "")
    table.add_row(f"calls/s, concurrency {CONCURRENCY}", f"{s['calls_per_s_c32']:.1f}", "")
    table.add_row("speed-up", f"{s['speedup']:.1f}x" + (" ✓" if s["ok"] else " ✗"), f">= {TARGET_SPEEDUP:g}x")
    table.add_row(f"CPU per verifier-sized call, {CPU_CONCURRENCY} in flight", f"{result['cpu_ms_per_call']:.2f} ms", "")
    table.add_row("cache hit p50 / p95", f"{c['p50_ms']:.2f} / {c['p95_ms']:.2f} ms", "")
    table.add_row("server calls during cache hits", str(c["server_calls"]), "0 " + ("✓" if c["server_calls"] == 0 else "✗"))
    (console or Console()).print(table)
    return result
