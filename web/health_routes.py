"""``/api/health``: that the server answers, what it runs and whether it needs a token (for
scripts, monitors and the benchmark)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from claire import __version__
from claire.evals.thresholds import default_threshold
from claire.web.deps import ConfigDep, SettingsDep
from claire.web.schemas import Health

server = APIRouter(prefix="/api", tags=["server"])


@server.get("/health", response_model=Health)
async def health(config: ConfigDep, settings: SettingsDep) -> dict[str, Any]:
    """The server's version, system, index, threshold (a score above it is flagged; for nli a REFUTES
    count from it on), whether scores are calibrated, its concurrency, and whether it needs a token."""
    threshold = default_threshold(config.agent.system, config.public_dict())
    return {"status": "ok", "version": __version__, "system": config.agent.system, "index": config.retrieval.index,
            "threshold": threshold, "calibrated": config.agent.calibration is not None,
            "concurrency": settings.concurrency, "token_required": settings.bearer_token() is not None}
