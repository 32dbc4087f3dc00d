"""Routes for checks (one fact) and scans (an article's facts): submit one to run in the
background, read where it stands, follow its live events, and check again what failed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response
from sse_starlette.sse import EventSourceResponse

from claire.tasks.fact_limits import check_fact
from claire.errors import ClaireError
from claire.web.deps import ConfigDep, RenderedScansDep, RunnerDep, StoreDep, job_or_404
from claire.web.events import event_stream
from claire.web.schemas import CheckAnswer, CheckRequest, Created, Rechecked, RecentScan, ScanAnswer, ScanRequest, ScanView
from claire.web.views import check_view
from claire.jobs.runner import JobBusy

checks = APIRouter(prefix="/api/check", tags=["checks"])
scans = APIRouter(prefix="/api/scan", tags=["scans"])


def searched_edition(config: Any, language: str | None) -> None:
    """A 422 unless the server searches edition ``language`` (its own or one of ``--languages``)."""
    searched = list(dict.fromkeys([config.retrieval.language, *config.retrieval.languages]))
    if language and language not in searched:
        raise HTTPException(422, f"this server checks the {', '.join(searched)} edition(s), not {language}: start it "
                                 f"with --languages {language} over an index that holds that edition")


@checks.post("", response_model=Created, status_code=202)
async def post_check(body: CheckRequest, config: ConfigDep, runner: RunnerDep) -> Created:
    """Check one fact in the background; poll GET /api/check/{id} or follow its events."""
    request = body.model_dump()
    request["fact"] = request["fact"].strip()
    if not request["fact"]:
        raise HTTPException(422, "the fact is empty")
    searched_edition(config, body.language)
    try:
        check_fact(request["fact"], config.agent.max_fact_chars)
    except ClaireError as error:
        raise HTTPException(422, str(error)) from None
    return Created(id=runner.submit_check(request))


@checks.get("/{job_id}", response_model=CheckAnswer)
async def get_check(job_id: str, store: StoreDep) -> dict[str, Any]:
    """Status, the steps so far and, when done, the Assessment (as ``claire check --json`` prints it)."""
    return check_view(store, job_or_404(store, job_id, "check"))


@checks.get("/{job_id}/events", response_class=EventSourceResponse)
async def check_events(job_id: str, request: Request, store: StoreDep, runner: RunnerDep) -> EventSourceResponse:
    """Server-sent events: ``step`` (one agent step), ``fact``, ``status``, then ``end``."""
    job_or_404(store, job_id, "check")
    return event_stream(request, store, runner, job_id)


@scans.post("", response_model=Created, status_code=202)
async def post_scan(body: ScanRequest, runner: RunnerDep, config: ConfigDep) -> Created:
    """Extract the facts of an article or passage and check each one in the background. A text of
    another edition (``language``) is checked only where the server searches that edition."""
    if not body.text.strip() or not body.title.strip():
        raise HTTPException(422, "the title and the text must not be blank")
    searched_edition(config, body.language)
    return Created(id=runner.submit_scan(body.model_dump()))


@scans.get("", response_model=list[RecentScan])
async def list_scans(store: StoreDep, limit: int = Query(50, ge=1, le=500)) -> list[dict[str, Any]]:
    """The latest scans, newest first, with their status and how many facts were checked and flagged."""
    return store.recent_scans(limit)


@scans.get("/{job_id}", response_model=ScanAnswer)
async def get_scan(job_id: str, store: StoreDep, config: ConfigDep, rendered: RenderedScansDep,
                   view: ScanView = "full") -> Response:
    """Status, progress and every fact with its span in the text, score, verdict, assessment and
    review. ``view=full`` gives assessments without their (large) trace, ``trace`` with it, and
    ``summary`` none at all: what a client polling for progress needs."""
    job = job_or_404(store, job_id, "scan")
    return Response(rendered.get(store, job, view, config.agent.system), media_type="application/json")


@scans.get("/{job_id}/events", response_class=EventSourceResponse)
async def scan_events(job_id: str, request: Request, store: StoreDep, runner: RunnerDep) -> EventSourceResponse:
    """Server-sent events: ``facts`` (extracted, with spans), ``step``, ``fact_started``, ``fact`` (checked), ``status``, ``end``."""
    job_or_404(store, job_id, "scan")
    return event_stream(request, store, runner, job_id)


def _recheck(runner: Any, store: Any, job_id: str, kind: str) -> Rechecked:
    job_or_404(store, job_id, kind)
    try:
        return Rechecked(id=job_id, requeued=runner.recheck_failed(job_id))
    except JobBusy as error:
        raise HTTPException(409, str(error)) from None


@checks.post("/{job_id}/recheck", response_model=Rechecked, status_code=202)
async def recheck_check(job_id: str, store: StoreDep, runner: RunnerDep) -> Rechecked:
    """Check a finished check again whose fact could not be checked (409 while it runs or when it did not fail)."""
    return _recheck(runner, store, job_id, "check")


@scans.post("/{job_id}/recheck", response_model=Rechecked, status_code=202)
async def recheck_scan(job_id: str, store: StoreDep, runner: RunnerDep) -> Rechecked:
    """Queue again the facts of a finished scan that could not be checked (the scan's extraction, if
    that failed); follow it as before. 409 while it runs or when nothing failed."""
    return _recheck(runner, store, job_id, "scan")
