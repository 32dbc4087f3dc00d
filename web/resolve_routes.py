"""``POST /api/resolve``: which side of a contradiction is right — for a flagged fact of a check,
scan or patrolled edit (its job id and the fact), or for a case given whole (the sides task's
shape). The answer is the resolver's card as ``claire resolve --json`` prints it, talk-page draft
included; nothing is posted anywhere."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import ValidationError

from claire.agent.runtime import open_system
from claire.domain import Assessment, Claim, recorded_outcome
from claire.resolving.flags import resolve_flag
from claire.tasks.sides.records import Resolution, SidesCase
from claire.web.deps import ConfigDep, RetrieverDep, StoreDep
from claire.web.schemas import ResolveRequest

resolving = APIRouter(prefix="/api", tags=["resolve"])


def _flag_of_fact(store: Any, job_id: str, wanted: str) -> tuple[Claim, Assessment]:
    job = store.job(job_id)
    if job is None:
        raise HTTPException(404, f"no check, scan or patrolled edit with id '{job_id}'")
    fact = next((f for f in store.facts(job_id) if wanted in (f["fact"], f["claim_id"], str(f["idx"]))), None)
    if fact is None:
        raise HTTPException(404, f"{job['kind']} '{job_id}' has no fact '{wanted[:80]}'")
    if fact["assessment"] is None or recorded_outcome(fact["assessment"]) != "flagged":
        raise HTTPException(409, "this fact was not flagged: there is no contradiction to resolve")
    try:
        claim, assessment = Claim.model_validate(fact["claim"]), Assessment.model_validate(fact["assessment"])
    except ValidationError:
        raise HTTPException(409, "this fact's stored check cannot be read") from None
    return claim, assessment


@resolving.post("/resolve", response_model=Resolution)
async def post_resolve(body: ResolveRequest, request: Request, store: StoreDep, retriever: RetrieverDep,
                       config: ConfigDep) -> dict[str, Any]:
    """Each side's sources read and rated, the decision with its reasons, what is missing, and the
    talk-page draft (a few LLM calls: one per readable cited source, one for the explanation)."""
    llm = request.app.state.runner.llm
    if body.case is not None:
        try:
            case = SidesCase.model_validate({"others": [], **body.case})
        except ValidationError as error:
            first = error.errors()[0]
            raise HTTPException(422, f"case.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
        # a case sent whole reads only the pages it supplies: the server connects to no address a
        # caller names, unless it was started with a token and fetching is on (resolve.fetch)
        settings = getattr(request.app.state, "settings", None)
        may_fetch = bool(settings is not None and settings.bearer_token() and config.resolve.fetch)
        resolving_config = config.with_overrides({"agent.system": "resolve", "agent.task": "sides",
                                                  "resolve.fetch": may_fetch})
        async with open_system(resolving_config, llm=llm, retriever=retriever) as resolver:
            resolution = await resolver.assess(case)
        return resolution.model_dump(mode="json")
    if not (body.job_id and body.fact is not None):
        raise HTTPException(422, "give a job_id and a fact, or a case")
    claim, assessment = await asyncio.to_thread(_flag_of_fact, store, body.job_id, body.fact.strip())
    # one decision per contradiction: flags that pair the same two statements share it
    found = await resolve_flag(config, claim, assessment, retriever=retriever, llm=llm,
                               memo=request.app.state.resolutions)
    if found is None:
        raise HTTPException(409, "the check named no passage this fact conflicts with")
    return found.model_dump(mode="json")
