"""``/api/health``: that the server answers, what it runs and whether it needs a token (for
scripts, monitors and the benchmark)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from claire import __version__
from claire.web.deps import ConfigDep, SettingsDep

server = APIRouter(prefix="/api", tags=["server"])


@server.get("/health")
async def health(config: ConfigDep, settings: SettingsDep) -> dict[str, Any]:
    """The server's version, system, index and concurrency, and whether it needs a token."""
    return {"status": "ok", "version": __version__, "system": config.agent.system, "index": config.retrieval.index,
            "concurrency": settings.concurrency, "token_required": settings.bearer_token() is not None}
