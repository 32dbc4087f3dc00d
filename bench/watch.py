"""The patrol's speed on a replayed stream (real HTTP everywhere, no model, no wiki).

A local EventStreams-like server plays ``edits`` recorded-format edits of distinct pages, a local
MediaWiki API serves their revisions, and the mock OpenAI server answers as a model would (every
added sentence a fact; CLAIRE searches once and finishes; half of the edits plant a contradiction).
For each number of edits in flight it reports the edits handled per second and the seconds from an
edit's event to its last fact checked (p50, p95), with the flagged count as a check of the plumbing.
The stream sends every edit at once when it opens, a burst, so an edit's time counts from the
first event read:
waiting for its turn (the patrol reads no further while ``edits_in_flight`` edits are being
checked) is part of it.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.bench.llm import ServerProcess
from claire.config import Config
from claire.testing.bench_models import patrol_answer
from claire.testing.wiki_doubles import EventStreamServer, WikiApiServer, change_event
from claire.workflows.patrol import run_patrol
from claire.web.settings import ServeSettings


def _wiki(edits: int) -> tuple[dict[int, tuple[int, str, str]], list[dict[str, Any]]]:
    revisions, events = {}, []
    for number in range(edits):
        title, page = f"Bridge {number}", 1000 + number
        base = f"'''{title}''' is a bridge over the river. It carries a road and a footpath across the valley."
        year = 1890 if number % 2 else 1900 + number
        revisions[10 * page] = (page, title, base)
        revisions[10 * page + 1] = (page, title, base + f" The Eiffel Tower was completed in {year} according to its plaque.")
        events.append(change_event(title, 10 * page, 10 * page + 1))
    return revisions, events


async def _run(edits: int, latency: float, in_flight: int, system: str) -> dict[str, Any]:
    revisions, events = _wiki(edits)
    with ServerProcess(patrol_answer, latency=latency) as llm, WikiApiServer(revisions) as api, \
            EventStreamServer(events, hold=600) as stream, tempfile.TemporaryDirectory() as tmp:
        config = Config().with_overrides({
            "llm.base_url": llm.base_url, "llm.api_key": "bench-key", "llm.cache": False, "llm.max_concurrency": 64,
            "agent.system": system, "retrieval.rerank": False, "watch.stream_url": stream.url, "watch.api_url": api.api_url,
            "watch.edits_in_flight": in_flight,
        })
        settings = ServeSettings(data_dir=Path(tmp), concurrency=in_flight)
        finished: list[float] = []  # seconds from the first event read to each edit's end
        first_read: list[float] = []  # the patrol opens the index and the model before it reads

        def progress(now: Any) -> None:
            if not first_read and now.seen:
                first_read.append(time.perf_counter())
            while first_read and len(finished) < now.checked + now.skipped + now.failed:
                finished.append(time.perf_counter() - first_read[0])

        started = time.perf_counter()
        stats = await run_patrol(config, settings, max_events=edits, on_progress=progress)
        wall = time.perf_counter() - started
    latencies = np.array(finished or [0.0])
    return {"in_flight": in_flight, "edits": edits, "wall_s": wall, "edits_per_s": edits / wall,
            "p50_s": float(np.percentile(latencies, 50)), "p95_s": float(np.percentile(latencies, 95)),
            "checked": stats.checked, "flagged": stats.flagged, "failed": stats.failed}


def run_watch_bench(*, edits: int = 24, latency: float = 0.2, in_flight: tuple[int, ...] = (1, 8), system: str = "claire",
                    console: Console | None = None) -> list[dict[str, Any]]:
    """Measure the patrol at each number of edits in flight; print a table and return the figures."""
    rows = [event_loop.run(_run(edits, latency, n, system)) for n in in_flight]
    table = Table(title=f"Patrol of a replayed stream: {edits} edits, {system}, {latency * 1000:g} ms per LLM answer")
    for column in ("Edits in flight", "Wall", "Edits/s", "Event to checked p50", "p95", "Checked", "Flagged facts", "Failed"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row["in_flight"]), f"{row['wall_s']:.1f} s", f"{row['edits_per_s']:.2f}", f"{row['p50_s']:.2f} s",
                      f"{row['p95_s']:.2f} s", str(row["checked"]), str(row["flagged"]), str(row["failed"]))
    table.caption = ("Each edit: one API call, one extraction, then CLAIRE on each new fact (search, finish, verify). "
                     "All edits arrive at once; event to checked counts from the first read, waiting included.")
    (console or Console()).print(table)
    return rows
