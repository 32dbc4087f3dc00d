"""The patrol's speed on a replayed stream (real HTTP everywhere, no model, no wiki).

A local EventStreams-like server plays ``edits`` recorded-format edits of distinct pages, a local
MediaWiki API serves their revisions, and the mock OpenAI server answers as a model would (every
added sentence a fact; CLAIRE searches once and finishes; half of the edits plant a contradiction),
taking ``latency`` seconds per answer. For each number of edits in flight it reports the edits
handled per second, the lag of each edit (from the moment the patrol read its event to its last
fact checked) and the process's peak resident memory, with the flagged count as a check of the
plumbing.

Two ways to replay: ``rate = 0`` sends every edit at once when the stream opens (a burst: the
patrol reads no further while ``edits_in_flight`` edits are being checked, so an edit's time counts
from the first event read, its wait included; edits/s is edits over the time to the last one
checked). ``rate > 0`` makes that many edits a second, on a fixed schedule, as a live wiki does —
English Wikipedia's articles see about one to two edits a second: an edit's lag counts from the
moment the stream made it (a patrol that falls behind reads it late, and that wait counts), edits/s
is the rate at which checked edits came out from the first to the last, and the lag's p50 over the
first and the last third of the edits (in stream order) stays level when the patrol keeps pace and
grows when it does not.
"""

from __future__ import annotations

import resource
import sys
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
from claire.jobs.store import JobStore
from claire.livewiki.patrol import run_patrol


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


def _finish_times(store_path: Path) -> dict[int, float]:
    """When each patrolled revision's job ended, from the job store."""
    store = JobStore(store_path)
    try:
        return {int(job_id.rsplit(":", 1)[1]): updated for job_id, updated in store.job_times("patrol")}
    finally:
        store.close()


def peak_rss_mb() -> float:
    """The peak resident memory of this process so far, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


async def _run(edits: int, latency: float, in_flight: int, system: str, rate: float) -> dict[str, Any]:
    revisions, events = _wiki(edits)
    interval = 1.0 / rate if rate > 0 else 0.0
    with ServerProcess(patrol_answer, latency=latency) as llm, WikiApiServer(revisions) as api, \
            EventStreamServer(events, hold=600, interval=interval) as stream, tempfile.TemporaryDirectory() as tmp:
        config = Config().with_overrides({
            "llm.base_url": llm.base_url, "llm.api_key": "bench-key", "llm.cache": False,
            "llm.max_concurrency": max(64, 4 * in_flight),
            "agent.system": system, "retrieval.rerank": False, "watch.stream_url": stream.url, "watch.api_url": api.api_url,
            # the stand-in model finishes its research after one search, as the table says: without
            # finish() (the paper preset offers none) every fact would run to the 10-step budget
            "agent.finish_action": True,
            "watch.edits_in_flight": in_flight,
        })
        finished: list[float] = []  # seconds from the first event read to each edit's end
        first_read: list[float] = []  # the patrol opens the index and the model before it reads

        def progress(now: Any) -> None:
            if not first_read and now.seen:
                first_read.append(time.perf_counter())
            while first_read and len(finished) < now.checked + now.skipped + now.failed:
                finished.append(time.perf_counter() - first_read[0])

        started = time.perf_counter()
        store_path = Path(tmp) / "jobs.sqlite"
        stats = await run_patrol(config, store_path=store_path, concurrency=in_flight, max_events=edits,
                                 on_progress=progress)
        wall = time.perf_counter() - started
        ended = _finish_times(store_path)  # revision -> when its job ended
        produced = dict(stream.produced)
    if rate <= 0:  # a burst: an edit's time counts from the first event read
        lags = np.array(finished or [0.0])
        rate_out = edits / max(finished) if finished else 0.0
    else:
        order = [(position, ended[event["revision"]["new"]]) for position, event in enumerate(events)
                 if event["revision"]["new"] in ended and position in produced]
        lags = np.array([end - produced[position] for position, end in order] or [0.0])  # in stream order
        ends = sorted(end for _, end in order)
        rate_out = (len(ends) - 1) / (ends[-1] - ends[0]) if len(ends) > 1 and ends[-1] > ends[0] else 0.0
    third = max(len(lags) // 3, 1)
    return {"in_flight": in_flight, "edits": edits, "wall_s": wall, "edits_per_s": rate_out,
            "p50_s": float(np.percentile(lags, 50)), "p95_s": float(np.percentile(lags, 95)),
            "first_third_p50_s": float(np.percentile(lags[:third], 50)),
            "last_third_p50_s": float(np.percentile(lags[-third:], 50)),
            "peak_rss_mb": peak_rss_mb(), "checked": stats.checked, "flagged": stats.flagged, "failed": stats.failed}


def run_watch_bench(*, edits: int = 24, latency: float = 0.2, in_flight: tuple[int, ...] = (1, 8), system: str = "claire",
                    rate: float = 0.0, console: Console | None = None) -> list[dict[str, Any]]:
    """Measure the patrol at each number of edits in flight; print a table and return the figures."""
    rows = [event_loop.run(_run(edits, latency, n, system, rate)) for n in in_flight]
    arrival = "all at once" if rate <= 0 else f"{rate:g} edits/s arriving"
    table = Table(title=f"Patrol of a replayed stream: {edits} edits {arrival}, {system}, "
                        f"{latency * 1000:g} ms per LLM answer")
    for column in ("In flight", "Wall", "Edits/s", "Lag p50", "p95", "p50 first ⅓", "p50 last ⅓",
                   "Peak RSS", "Checked", "Flagged", "Failed"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row["in_flight"]), f"{row['wall_s']:.1f} s", f"{row['edits_per_s']:.2f}", f"{row['p50_s']:.2f} s",
                      f"{row['p95_s']:.2f} s", f"{row['first_third_p50_s']:.2f} s", f"{row['last_third_p50_s']:.2f} s",
                      f"{row['peak_rss_mb']:,.0f} MB", str(row["checked"]), str(row["flagged"]), str(row["failed"]))
    table.caption = ("Each edit: one API call, one extraction, then CLAIRE on each new fact (search, finish, verify). "
                     + ("All edits arrive at once; lag counts from the first read, waiting included."
                        if rate <= 0 else "Lag: from the moment the stream made an edit to its last fact checked; level "
                        "from the first third of the edits to the last when the patrol keeps pace.")
                     + " Peak RSS: this process, so far.")
    (console or Console()).print(table)
    return rows
