"""The Worklist tab's API: the entries of the corpus run the server was started with (``claire
serve --worklist DIR``), filtered; an editor's decision on one (accepted, rejected, or open again,
with a note), written back to the run directory so it is kept with the run; and the export.

- ``GET /api/worklist?article=&decision=&status=`` — the entries, ranked as the run ranked them;
- ``POST /api/worklist/{entry_id}`` — ``{status, note?}``;
- ``GET /api/worklist/export?format=wiki|jsonl`` — the worklist as wikitext or JSONL (open entries
  only unless ``all=true``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

from claire.errors import ClaireError
from claire.jobs.worklist import read_worklist, write_worklist
from claire.resolving.worklist import WorklistEntry, worklist_wikitext

worklist = APIRouter(prefix="/api", tags=["worklist"])
_LOCK = asyncio.Lock()


class WorklistAnswer(BaseModel):
    """The entries shown, and how many there are in all and still open."""

    run: str | None
    entries: list[WorklistEntry]
    total: int
    open: int


class EntryDecision(BaseModel):
    status: Literal["open", "accepted", "rejected"]
    note: str | None = Field(None, max_length=2000)


def _run_dir(request: Request) -> Path:
    settings = getattr(request.app.state, "settings", None)
    run = getattr(settings, "worklist", None)
    if run is None:
        raise HTTPException(404, "this server shows no worklist: start it with `claire serve --worklist DIR`")
    return Path(run)


def _entries(run: Path) -> list[WorklistEntry]:
    try:
        return read_worklist(run)
    except ClaireError as error:
        raise HTTPException(409, f"the worklist in {run} cannot be read: {error}") from None


@worklist.get("/worklist", response_model=WorklistAnswer)
async def get_worklist(request: Request, article: str = "", decision: str = "",
                       status: Literal["", "open", "accepted", "rejected"] = "") -> WorklistAnswer:
    """The entries, filtered by an article (either side's, any part of its title), a decision
    (fact, passage, both, unknown) and a status."""
    run = getattr(getattr(request.app.state, "settings", None), "worklist", None)
    if run is None:
        return WorklistAnswer(run=None, entries=[], total=0, open=0)
    entries = await asyncio.to_thread(_entries, Path(run))
    wanted = article.strip().casefold()
    shown = [e for e in entries
             if (not wanted or any(wanted in side.document_title.casefold() for side in e.sides))
             and (not decision or e.decision == decision) and (not status or e.status == status)]
    return WorklistAnswer(run=str(run), entries=shown, total=len(entries),
                          open=sum(1 for e in entries if e.status == "open"))


@worklist.post("/worklist/{entry_id}", response_model=WorklistEntry)
async def decide_entry(entry_id: str, body: EntryDecision, request: Request) -> WorklistEntry:
    """Record an editor's decision on one entry (kept in the run's worklist.jsonl, across reruns)."""
    run = _run_dir(request)
    async with _LOCK:
        entries = await asyncio.to_thread(_entries, run)
        found = next((e for e in entries if e.id == entry_id), None)
        if found is None:
            raise HTTPException(404, f"the worklist has no entry '{entry_id[:80]}'")
        updated = found.model_copy(update={"status": body.status, "note": (body.note or "").strip() or None})
        entries = [updated if e.id == entry_id else e for e in entries]
        await asyncio.to_thread(write_worklist, run, entries, keep_decisions=False)
    return updated


@worklist.get("/worklist/export", response_class=PlainTextResponse)
async def export_worklist(request: Request, format: Literal["wiki", "jsonl"] = "wiki",
                          all: bool = Query(False, description="include entries already decided")) -> PlainTextResponse:
    """The worklist as wikitext to paste on a WikiProject page, or as JSONL."""
    entries = await asyncio.to_thread(_entries, _run_dir(request))
    entries = entries if all else [e for e in entries if e.status == "open"]
    if format == "jsonl":
        return PlainTextResponse("".join(e.model_dump_json() + "\n" for e in entries), media_type="application/x-ndjson")
    return PlainTextResponse(worklist_wikitext(entries), media_type="text/plain; charset=utf-8")
