"""The FastAPI app behind ``claire serve``: :func:`create_app` wires the server's services, its
guards and its routers together.

The routes live in ``*_routes.py`` by what they serve (checks and scans, reviews, which side is
right, the index, the page, health) and only validate, store and read: checking runs in
:class:`~claire.jobs.runner.JobRunner` through the same ``open_system`` the CLI uses. What the
routes share reaches them through ``web/deps.py`` from ``app.state``: the configuration and
settings from the start, the job store, runner and retriever once the server has started.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from functools import partial
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from claire import __version__
from claire.llm.client import ChatClient
from claire.agent.runtime import open_retrieval
from claire.config import Config
from claire.errors import ClaireError, redact
from claire.indexes.registry import Searcher
from claire.web import security
from claire.web.health_routes import server
from claire.web.job_routes import checks, scans
from claire.jobs.runner import JobRunner, TooBusy
from claire.web.page_routes import mount_files, pages
from claire.web.patrol_routes import patrol as patrol_routes
from claire.livewiki.patrol import patrol_from_config
from claire.resolving.flags import Resolutions
from claire.web.resolve_routes import resolving
from claire.web.worklist_routes import worklist as worklist_routes
from claire.web.review_routes import reviews
from claire.web.search_routes import index
from claire.web.settings import ServeSettings
from claire.jobs.store import JobStore
from claire.web.views import RenderedScans

log = logging.getLogger(__name__)


@asynccontextmanager
async def running_services(app: FastAPI, *, llm: ChatClient | None, retriever: Searcher | None) -> AsyncIterator[None]:
    """The app's lifespan: open the job store, the LLM client, the retriever and the job runner,
    resume the jobs a previous server left unfinished, and at shutdown stop the jobs and close
    what was opened here (a given ``llm`` or ``retriever`` is left open)."""
    config: Config = app.state.config
    settings: ServeSettings = app.state.settings
    store = JobStore(settings.store_path())
    client = llm or ChatClient.from_config(config.llm)
    searcher = retriever or await asyncio.to_thread(open_retrieval, config)
    runner = JobRunner(config, store, llm=client, retriever=searcher, concurrency=settings.concurrency,
                       max_jobs=settings.max_jobs)
    app.state.store, app.state.runner, app.state.retriever = store, runner, searcher
    runner.resume()
    patrol, patrolling = None, None
    if settings.watch:  # the patrol of live edits, inside the server (its results: GET /api/patrol)
        patrol = patrol_from_config(config, store, runner)
        patrolling = asyncio.get_running_loop().create_task(patrol.run(), name="claire-patrol")
        patrolling.add_done_callback(partial(_patrol_ended, app))
    app.state.patrol, app.state.patrol_stopped = patrol, None
    try:
        yield
    finally:
        if patrol is not None and patrolling is not None:
            patrol.stop()
            patrolling.cancel()
            await asyncio.gather(patrolling, return_exceptions=True)
            await patrol.wiki.aclose()
        await runner.shutdown()
        if retriever is None:
            searcher.close()
        if llm is None:
            await client.aclose()
        store.close()


def _patrol_ended(app: FastAPI, task: asyncio.Task) -> None:
    """Record (and log, when it failed) why a patrol stopped before the server did: the API then
    stops reporting it as watching and says why."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        reason = redact(str(error) if isinstance(error, ClaireError) else f"{type(error).__name__}: {error}")
        log.error("the patrol stopped: %s", reason)
    else:
        reason = "the recording has ended" if app.state.config.watch.replay else "the event stream ended"
    app.state.patrol_stopped = reason


async def invalid_request_response(_: Request, error: RequestValidationError) -> JSONResponse:
    """422 with where and what for each problem, never the input itself: a body holding half a
    surrogate pair or ``1e309`` must not break the answer that refuses it."""
    def readable(value: object) -> str | int:
        return value if isinstance(value, int) else str(value).encode("utf-8", "replace").decode("utf-8")

    detail = [{"loc": [readable(part) for part in item.get("loc", ())], "msg": readable(item.get("msg", "")),
               "type": readable(item.get("type", ""))} for item in error.errors()]
    return JSONResponse({"detail": detail}, status_code=422)


async def claire_error_response(_: Request, error: ClaireError) -> JSONResponse:
    """A :class:`ClaireError` out of a route as its one-line message: 429 for a full queue, else 400."""
    return JSONResponse({"detail": str(error)}, status_code=429 if isinstance(error, TooBusy) else 400)


def create_app(config: Config, settings: ServeSettings | None = None, *, llm: ChatClient | None = None,
               retriever: Searcher | None = None) -> FastAPI:
    """The app. A given ``llm`` / ``retriever`` is used and left open; otherwise they are opened
    from ``config`` at start-up and closed at shutdown."""
    settings = settings or ServeSettings()
    app = FastAPI(title="CLAIRE", version=__version__, lifespan=partial(running_services, llm=llm, retriever=retriever),
                  description="Find facts in Wikipedia that another part of Wikipedia contradicts.")
    app.state.config = config
    app.state.settings = settings
    app.state.rendered_scans = RenderedScans()
    app.state.resolutions = Resolutions()  # one decision per contradiction, however many flags reach it
    security.install(app, token=settings.bearer_token(), max_body=settings.max_body_bytes,
                     extra_origins=settings.cors_origins, own_origins=settings.own_origins(),
                     hosts=settings.trusted_hosts())
    app.add_exception_handler(ClaireError, claire_error_response)
    app.add_exception_handler(RequestValidationError, invalid_request_response)
    for router in (checks, scans, reviews, resolving, patrol_routes, worklist_routes, index, server, pages):
        app.include_router(router)
    mount_files(app)
    return app
