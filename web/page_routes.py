"""The editor's page at ``/`` with its files under ``/static``, and the browser extension's shared
panel files under ``/ext``. None of them holds data, so none needs the token."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

HERE = Path(__file__).parent
STATIC = HERE / "static"
EXTENSION = HERE / "extension"

pages = APIRouter()


@pages.get("/", include_in_schema=False)
async def page() -> FileResponse:
    """The editor's page (no build step: plain HTML, CSS and JavaScript)."""
    return FileResponse(STATIC / "index.html")


def mount_files(app: FastAPI) -> None:
    """Serve the page's files and the extension's shared files (a router cannot hold mounts)."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount("/ext", StaticFiles(directory=EXTENSION), name="extension")

