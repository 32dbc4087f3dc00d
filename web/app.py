"""The FastAPI app behind ``claire serve``: JSON endpoints for checks, scans, live events,
reviews and search, the editor's page and the browser extension's shared panel files.

The routes only validate, store and read: checking runs in :class:`~claire.web.jobs.JobRunner`
through the same ``open_system`` the CLI uses. ``create_app(config, settings)`` builds it; the
LLM client and retriever are opened when the server starts and closed when it stops.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import AliasChoices, BaseModel, Field, SecretStr
from sse_starlette.sse import EventSourceResponse

from claire import __version__
from claire.tasks.fact_limits import check_fact
from claire.llm.client import ChatClient
from claire.agent.runtime import open_retrieval
from claire.config import Config, data_dir
from claire.errors import ClaireError
from claire.indexes import http_search
from claire.indexes.registry import Searcher
from claire.web import security
from claire.web.jobs import JobRunner, TooBusy, cited_numbers
from claire.web.store import JobStore

HERE = Path(__file__).parent
MAX_TEXT = 200_000  # characters of an article; a long Wikipedia article is ~100k


class ServeSettings(BaseModel):
    """How the server listens and guards itself (the checking itself follows :class:`Config`)."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    token: SecretStr | None = None
    concurrency: int = Field(4, ge=1, le=256)
    max_body_bytes: int = Field(1_000_000, ge=1024)
    max_jobs: int = Field(200, ge=1)  # queued or running at once; more are refused with 429
    data_dir: Path | None = None
    cors_origins: list[str] = Field(default_factory=list)

    def store_path(self) -> Path:
        return (self.data_dir or data_dir() / "web") / "jobs.sqlite"

    def own_origins(self) -> list[str]:
        hosts = {self.host, "127.0.0.1", "localhost"} if security.is_loopback(self.host) else {self.host}
        return [f"http://{host}:{self.port}" for host in sorted(hosts)]


SystemName = Literal["claire", "rav", "nli"]


class CheckRequest(BaseModel):
    fact: str = Field(min_length=1, max_length=100_000)  # agent.max_fact_chars decides, with the scan hint
    title: str | None = Field(None, max_length=300)
    section: str | None = Field(None, max_length=300)
    context: str | None = Field(None, max_length=20_000)
    system: SystemName | None = None


class ScanRequest(BaseModel):
    title: str = Field(min_length=1, max_length=300)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    section: str | None = Field(None, max_length=300)
    system: SystemName | None = None
    max_facts: int | None = Field(None, ge=1, le=1000)


class ReviewRequest(BaseModel):
    job_id: str = Field(validation_alias=AliasChoices("job_id", "scan_id", "check_id", "id"), max_length=64)
    fact: str = Field(min_length=1, max_length=2000, description="the fact's text, its claim id or its index")
    decision: Literal["accept", "reject"]
    comment: str | None = Field(None, max_length=4000)


class Created(BaseModel):
    id: str


def _fact_view(fact: dict[str, Any], review: dict[str, Any] | None) -> dict[str, Any]:
    assessment = fact["assessment"]
    return {
        "index": fact["idx"], "id": fact["claim_id"], "fact": fact["fact"], "start": fact["span_start"],
        "end": fact["span_end"], "status": fact["status"], "score": fact["score"], "verdict": fact["verdict"],
        "error": fact["error"], "cited": cited_numbers((assessment or {}).get("reasoning")),
        "assessment": assessment,
        "review": {k: review[k] for k in ("decision", "comment", "created")} if review else None,
    }


def _label(verdict: str | None, decision: str) -> str | None:
    """The label an editor's decision gives a fact: accept keeps the system's verdict, reject flips it."""
    if verdict not in ("consistent", "inconsistent"):
        return None
    if decision == "accept":
        return verdict
    return "consistent" if verdict == "inconsistent" else "inconsistent"


def create_app(config: Config, settings: ServeSettings | None = None, *, llm: ChatClient | None = None,
               retriever: Searcher | None = None) -> FastAPI:
    """The app. A given ``llm`` / ``retriever`` is used and left open; otherwise they are opened
    from ``config`` at start-up and closed at shutdown."""
    settings = settings or ServeSettings()
    token = settings.token.get_secret_value() if settings.token else None
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        store = JobStore(settings.store_path())
        own_llm, own_retriever = llm is None, retriever is None
        client = llm or ChatClient.from_config(config.llm)
        searcher = retriever or await asyncio.to_thread(open_retrieval, config)
        runner = JobRunner(config, store, llm=client, retriever=searcher, concurrency=settings.concurrency,
                           max_jobs=settings.max_jobs)
        state.update(store=store, runner=runner, retriever=searcher)
        runner.resume()
        try:
            yield
        finally:
            await runner.shutdown()
            if own_retriever:
                searcher.close()
            if own_llm:
                await client.aclose()
            store.close()

    app = FastAPI(title="CLAIRE", version=__version__, lifespan=lifespan,
                  description="Find facts in Wikipedia that another part of Wikipedia contradicts.")
    security.install(app, token=token, max_body=settings.max_body_bytes, extra_origins=settings.cors_origins,
                     own_origins=settings.own_origins())

    def store() -> JobStore:
        return state["store"]

    def runner() -> JobRunner:
        return state["runner"]

    def job_or_404(job_id: str, kind: str) -> dict[str, Any]:
        job = store().job(job_id)
        if job is None or job["kind"] != kind:
            raise HTTPException(404, f"no {kind} with id '{job_id}'")
        return job

    @app.exception_handler(ClaireError)
    async def claire_error(_: Request, error: ClaireError) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=429 if isinstance(error, TooBusy) else 400)

    # -- checks and scans ------------------------------------------------------------------
    @app.post("/api/check", response_model=Created, status_code=202, tags=["checks"])
    async def post_check(body: CheckRequest) -> Created:
        """Check one fact in the background; poll GET /api/check/{id} or follow its events."""
        request = body.model_dump()
        request["fact"] = request["fact"].strip()
        if not request["fact"]:
            raise HTTPException(422, "the fact is empty")
        try:
            check_fact(request["fact"], config.agent.max_fact_chars)
        except ClaireError as error:
            raise HTTPException(422, str(error)) from None
        return Created(id=runner().submit_check(request))

    @app.get("/api/check/{job_id}", tags=["checks"])
    async def get_check(job_id: str) -> dict[str, Any]:
        """Status, the steps so far and, when done, the Assessment (as ``claire check --json`` prints it)."""
        job = job_or_404(job_id, "check")
        facts = store().facts(job_id)
        fact = facts[0] if facts else None
        steps = [e["data"] for e in store().events(job_id, kinds=("step",))]
        return {"id": job_id, "status": job["status"], "error": job["error"] or (fact or {}).get("error"),
                "request": job["request"], "steps": steps, "assessment": fact["assessment"] if fact else None,
                "cited": cited_numbers(((fact or {}).get("assessment") or {}).get("reasoning")),
                "review": next(iter(store().reviews(job_id)), None)}

    @app.post("/api/scan", response_model=Created, status_code=202, tags=["scans"])
    async def post_scan(body: ScanRequest) -> Created:
        """Extract the facts of an article or passage and check each one in the background."""
        if not body.text.strip() or not body.title.strip():
            raise HTTPException(422, "the title and the text must not be blank")
        return Created(id=runner().submit_scan(body.model_dump()))

    def scan_view(job: dict[str, Any], view: str) -> bytes:
        job_id = job["id"]
        reviews = {r["claim_id"]: r for r in store().reviews(job_id)}
        facts = [_fact_view(f, reviews.get(f["claim_id"])) for f in store().facts(job_id)]
        for fact in facts:
            if view == "summary":
                fact["assessment"] = None
            elif view == "full" and fact["assessment"]:
                fact["assessment"].pop("trace", None)
        done = sum(f["status"] in ("done", "error") for f in facts)
        view = {"id": job_id, "status": job["status"], "error": job["error"], "title": job["request"]["title"],
                "text": job["request"]["text"], "system": job["request"].get("system") or config.agent.system,
                "progress": {"total": len(facts), "done": done, "errors": sum(f["status"] == "error" for f in facts),
                             "flagged": sum(f["verdict"] == "inconsistent" for f in facts)},
                "facts": facts}
        return json.dumps(view, ensure_ascii=False).encode()

    rendered: dict[tuple[str, str], tuple[tuple[Any, ...], bytes]] = {}

    @app.get("/api/scan/{job_id}", tags=["scans"])
    async def get_scan(job_id: str, view: Literal["full", "summary", "trace"] = "full") -> Response:
        """Status, progress and every fact with its span in the text, score, verdict, assessment and
        review. ``view=full`` gives assessments without their (large) trace, ``trace`` with it, and
        ``summary`` none at all: what a client polling for progress needs."""
        job = job_or_404(job_id, "scan")
        version = (job["status"], *store().version(job_id))
        cached = rendered.get((job_id, view))
        if cached is None or cached[0] != version:  # pollers mostly ask again before anything changed
            cached = rendered[(job_id, view)] = (version, scan_view(job, view))
            if len(rendered) > 256:
                rendered.pop(next(iter(rendered)))
        return Response(cached[1], media_type="application/json")

    async def events(job_id: str, kind: str, request: Request) -> EventSourceResponse:
        job_or_404(job_id, kind)
        last = request.headers.get("last-event-id", "0")
        after = int(last) if last.isdigit() else 0

        async def stream():
            nonlocal after
            with runner().listening(job_id) as wake:
                while True:
                    wake.clear()
                    for event in store().events(job_id, after=after):
                        after = event["seq"]
                        yield {"id": str(after), "event": event["kind"], "data": json.dumps(event["data"], ensure_ascii=False)}
                    job = store().job(job_id)
                    if job and job["status"] in ("done", "error"):
                        yield {"event": "end", "data": json.dumps({"status": job["status"], "error": job["error"]})}
                        return
                    with suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(wake.wait(), timeout=10)

        return EventSourceResponse(stream(), ping=15)

    @app.get("/api/check/{job_id}/events", tags=["checks"])
    async def check_events(job_id: str, request: Request) -> EventSourceResponse:
        """Server-sent events: ``step`` (one agent step), ``fact``, ``status``, then ``end``."""
        return await events(job_id, "check", request)

    @app.get("/api/scan/{job_id}/events", tags=["scans"])
    async def scan_events(job_id: str, request: Request) -> EventSourceResponse:
        """Server-sent events: ``facts`` (extracted, with spans), ``step``, ``fact_started``, ``fact`` (checked), ``status``, ``end``."""
        return await events(job_id, "scan", request)

    # -- reviews ---------------------------------------------------------------------------
    @app.post("/api/reviews", tags=["reviews"])
    async def post_review(body: ReviewRequest) -> dict[str, Any]:
        """Accept or reject a checked fact (and comment); a later review of the same fact replaces it."""
        job = store().job(body.job_id)
        if job is None:
            raise HTTPException(404, f"no scan or check with id '{body.job_id}'")
        facts = store().facts(body.job_id)
        wanted = body.fact.strip()
        fact = next((f for f in facts if wanted in (f["fact"], f["claim_id"], str(f["idx"]))), None)
        if fact is None:
            raise HTTPException(404, f"{job['kind']} '{body.job_id}' has no fact '{wanted[:80]}'")
        return store().put_review(body.job_id, fact["claim_id"], fact["fact"], body.decision, body.comment)

    @app.get("/api/reviews", tags=["reviews"])
    async def get_reviews(job_id: str | None = None) -> dict[str, Any]:
        return {"reviews": store().reviews(job_id)}

    @app.get("/api/reviews/export", tags=["reviews"])
    async def export_reviews() -> JSONResponse:
        """Reviewed facts as a WikiCollide-shaped dataset (labels from the editors' decisions)."""
        records = []
        for review in store().reviews():
            job = store().job(review["job_id"])
            fact = next((f for f in store().facts(review["job_id"]) if f["claim_id"] == review["claim_id"]), None)
            if job is None or fact is None:
                continue
            label = _label(fact["verdict"], review["decision"])
            if label is None:
                continue
            context = fact["claim"].get("context") or {}
            assessment = fact["assessment"] or {}
            records.append({
                "claim": {"claim_id": f"{review['job_id']}-{fact['claim_id']}", "claim_text": fact["fact"],
                          "claim_context_block": {"content": context.get("content") or fact["fact"],
                                                  "document_title": context.get("document_title") or job["request"].get("title") or "(none)",
                                                  "section_title": context.get("section_title") or "",
                                                  "last_edit_date": context.get("last_edit_date"), "url": context.get("url")}},
                "label": label,
                "label_reasoning": review["comment"] or f"editor {review['decision']}ed the {fact['verdict']} verdict",
                "agent_trace": assessment.get("trace") or [],
            })
        return JSONResponse(records, headers={"Content-Disposition": 'attachment; filename="claire-reviews.json"'})

    # -- the index -------------------------------------------------------------------------
    async def _search(query: str, k: int, exclude_title: str | None) -> list[Any]:
        retrieval = config.retrieval
        return await asyncio.to_thread(state["retriever"].search, query, exclude_title=exclude_title or None, k=k,
                                       mode=retrieval.mode, candidates=max(retrieval.candidates, k))

    @app.post("/api/search", tags=["index"])
    async def post_search(body: http_search.SearchRequest) -> JSONResponse:
        """Ranked blocks of the index (never from ``exclude_title``): the search-endpoint contract
        that ``retrieval.url = "http://HOST:PORT/api/search"`` reads (indexes/http_search.py)."""
        status, payload = await asyncio.to_thread(
            http_search.answer, state["retriever"], body.model_dump(), index=config.retrieval.index
        )
        return JSONResponse(payload, status_code=status)

    @app.get("/api/articles", tags=["index"])
    async def find_articles(q: str = Query(min_length=1, max_length=300)) -> dict[str, Any]:
        """Article titles of the index that match ``q`` (best first)."""
        hits = await _search(q, 30, None)
        return {"titles": list(dict.fromkeys(h.block.document_title for h in hits))[:10]}

    @app.get("/api/article", tags=["index"])
    async def get_article(title: str = Query(min_length=1, max_length=300)) -> dict[str, Any]:
        """The text of an article of the index, section by section (as far as search reaches it)."""
        hits = await _search(title, 100, None)
        blocks = [h.block for h in hits if h.block.document_title == title]
        if not blocks:
            raise HTTPException(404, f"no article titled '{title}' in the index")
        blocks.sort(key=lambda b: b.id)
        sections: dict[str, list[str]] = {}
        for block in blocks:
            sections.setdefault(block.section_title, []).append(block.content)
        text = "\n\n".join("\n\n".join(parts) for parts in sections.values())
        return {"title": title, "text": text, "blocks": len(blocks)}

    @app.get("/api/health", tags=["server"])
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "system": config.agent.system, "index": config.retrieval.index,
                "concurrency": settings.concurrency, "token_required": token is not None}

    # -- the page and the extension's shared files -------------------------------------------
    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(HERE / "static" / "index.html")

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.mount("/ext", StaticFiles(directory=HERE / "extension"), name="extension")
    return app
