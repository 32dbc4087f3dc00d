"""What the routes share, as FastAPI dependencies: the configuration, the server settings, the
job store, the job runner, the retriever and the cache of rendered scans, all read from
``app.state`` (set by :func:`~claire.web.app.create_app` and its lifespan).

Use them as parameter types: ``store: StoreDep`` gives the route the app's :class:`JobStore`
(they are coroutines so that FastAPI calls them on the loop, not on a worker thread).
The bearer token is not among them: it is checked by ASGI middleware (``web/security.py``)
before any route is matched or any body is read.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from claire.config import Config
from claire.indexes.registry import Searcher
from claire.jobs.runner import JobRunner
from claire.web.settings import ServeSettings
from claire.jobs.store import JobStore
from claire.web.views import RenderedScans


async def get_config(request: Request) -> Config:
    """The configuration checks follow."""
    return request.app.state.config


async def get_settings(request: Request) -> ServeSettings:
    """How the server listens and guards itself."""
    return request.app.state.settings


async def get_store(request: Request) -> JobStore:
    """The job store opened for the server's life."""
    return request.app.state.store


async def get_runner(request: Request) -> JobRunner:
    """The runner that checks facts in the background."""
    return request.app.state.runner


async def get_retriever(request: Request) -> Searcher:
    """The index the server searches."""
    return request.app.state.retriever


async def get_rendered_scans(request: Request) -> RenderedScans:
    """The app's cache of scan views, so that polling an unchanged scan is cheap."""
    return request.app.state.rendered_scans


ConfigDep = Annotated[Config, Depends(get_config)]
SettingsDep = Annotated[ServeSettings, Depends(get_settings)]
StoreDep = Annotated[JobStore, Depends(get_store)]
RunnerDep = Annotated[JobRunner, Depends(get_runner)]
RetrieverDep = Annotated[Searcher, Depends(get_retriever)]
RenderedScansDep = Annotated[RenderedScans, Depends(get_rendered_scans)]


def job_or_404(store: JobStore, job_id: str, kind: str) -> dict[str, Any]:
    """The stored job ``job_id`` if it is a ``kind`` ("check" or "scan"); 404 otherwise."""
    job = store.job(job_id)
    if job is None or job["kind"] != kind:
        raise HTTPException(404, f"no {kind} with id '{job_id}'")
    return job
