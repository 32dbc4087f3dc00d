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


def _from_app_state(name: str) -> Any:
    """A dependency that gives a route ``app.state.<name>`` (a coroutine, so FastAPI calls it on the loop)."""
    async def dependency(request: Request) -> Any:
        return getattr(request.app.state, name)

    dependency.__name__ = f"app_state_{name}"
    return Depends(dependency)


ConfigDep = Annotated[Config, _from_app_state("config")]  # the configuration checks follow
SettingsDep = Annotated[ServeSettings, _from_app_state("settings")]  # how the server listens and guards itself
StoreDep = Annotated[JobStore, _from_app_state("store")]  # the job store opened for the server's life
RunnerDep = Annotated[JobRunner, _from_app_state("runner")]  # the runner that checks facts in the background
RetrieverDep = Annotated[Searcher, _from_app_state("retriever")]  # the index the server searches
RenderedScansDep = Annotated[RenderedScans, _from_app_state("rendered_scans")]  # scan views, so polling is cheap


def job_or_404(store: JobStore, job_id: str, kind: str) -> dict[str, Any]:
    """The stored job ``job_id`` if it is a ``kind`` ("check" or "scan"); 404 otherwise."""
    job = store.job(job_id)
    if job is None or job["kind"] != kind:
        raise HTTPException(404, f"no {kind} with id '{job_id}'")
    return job
