"""``GET /api/patrol``: the checked facts of patrolled live edits, newest edit first (reviewed with
``POST /api/reviews`` like any scan's facts, the edit's job id naming them)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.requests import Request

from claire.web.deps import StoreDep
from claire.web.schemas import Patrol
from claire.web.views import patrol_item

patrol = APIRouter(prefix="/api", tags=["patrol"])


@patrol.get("/patrol", response_model=Patrol)
async def get_patrol(request: Request, store: StoreDep, flagged: bool = True,
                     limit: int = Query(200, ge=1, le=2000)) -> dict[str, Any]:
    """Facts from new edits, newest edit first: flagged ones (``flagged=false``: every checked
    fact), each with its edit, score, verdict, evidence, diff link and review (``left_out``: what of
    a large edit was not checked, or null); and the patrol's
    counts (``watching`` says whether this server runs one now; ``stopped``, why one it ran ended)."""
    runner = getattr(request.app.state, "patrol", None)
    stopped = getattr(request.app.state, "patrol_stopped", None)
    return {"items": [{**patrol_item(row), "left_out": row["notes"].get("left_out")}
                      for row in store.patrol_items(flagged_only=flagged, limit=limit)],
            "watching": runner is not None and stopped is None, "stopped": stopped, "edits": store.patrol_counts(),
            "stats": runner.stats.to_dict() if runner is not None else None}
