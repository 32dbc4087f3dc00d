"""A job's live events as server-sent events: everything stored for the job after the client's
``Last-Event-ID``, then each new event as the runner publishes it, then ``end`` once the job is
done or failed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import Any

from fastapi import Request
from sse_starlette.sse import EventSourceResponse

from claire.files import strict_json
from claire.jobs.runner import JobRunner
from claire.jobs.store import JobStore

WAKE_EVERY_S = 10  # look at the store at least this often, even if the runner published nothing
PING_EVERY_S = 15  # a comment line that keeps proxies from closing a quiet stream


async def job_events(store: JobStore, runner: JobRunner, job_id: str, after: int) -> AsyncIterator[dict[str, Any]]:
    """The events of ``job_id`` after sequence number ``after``, as they come, ending with ``end``."""
    with runner.listening(job_id) as wake:
        while True:
            wake.clear()
            for event in store.events(job_id, after=after):
                after = event["seq"]
                yield {"id": str(after), "event": event["kind"], "data": strict_json(event["data"])}
            job = store.job(job_id)
            if job and job["status"] in ("done", "error"):
                yield {"event": "end", "data": strict_json({"status": job["status"], "error": job["error"]})}
                return
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=WAKE_EVERY_S)


def event_stream(request: Request, store: JobStore, runner: JobRunner, job_id: str) -> EventSourceResponse:
    """The streaming response for ``job_id``, resuming after the request's ``Last-Event-ID``."""
    after = resume_after(request.headers.get("last-event-id"))
    return EventSourceResponse(job_events(store, runner, job_id, after), ping=PING_EVERY_S)


def resume_after(last_event_id: str | None) -> int:
    """The sequence number a client's ``Last-Event-ID`` asks to resume after: an id this server
    wrote is a decimal number SQLite can hold; anything else (another script's digits, a number past
    SQLite's integers, a sign) is ignored, and the stream starts from the beginning."""
    last = (last_event_id or "").strip()
    return int(last) if last.isascii() and last.isdigit() and len(last) <= 18 else 0
