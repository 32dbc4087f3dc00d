"""Routes for editors' reviews: accept or reject a checked fact, list the reviews, and export the
reviewed facts as a WikiCollide-shaped dataset."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse

from claire.web.deps import StoreDep
from claire.web.schemas import Review, ReviewRequest, Reviews
from claire.web.views import review_record

reviews = APIRouter(prefix="/api/reviews", tags=["reviews"])


@reviews.post("", response_model=Review)
async def post_review(body: ReviewRequest, store: StoreDep) -> dict[str, Any]:
    """Accept or reject a checked fact (and comment); a later review of the same fact replaces it."""
    job = store.job(body.job_id)
    if job is None:
        raise HTTPException(404, f"no scan or check with id '{body.job_id}'")
    wanted = body.fact.strip()
    fact = next((f for f in store.facts(body.job_id) if wanted in (f["fact"], f["claim_id"], str(f["idx"]))), None)
    if fact is None:
        raise HTTPException(404, f"{job['kind']} '{body.job_id}' has no fact '{wanted[:80]}'")
    return store.put_review(body.job_id, fact["claim_id"], fact["fact"], body.decision, body.comment)


@reviews.get("", response_model=Reviews)
async def get_reviews(store: StoreDep, job_id: str | None = None) -> dict[str, Any]:
    """Every review, oldest first, or those of one job."""
    return {"reviews": store.reviews(job_id)}


@reviews.get("/export")
async def export_reviews(store: StoreDep) -> JSONResponse:
    """Reviewed facts as a WikiCollide-shaped dataset (labels from the editors' decisions)."""
    records = [record for record in (review_record(store, review) for review in store.reviews()) if record is not None]
    return JSONResponse(records, headers={"Content-Disposition": 'attachment; filename="claire-reviews.json"'})
