"""Routes over the server's index: the search endpoint other CLAIRE installs can retrieve from,
article titles matching a query, and an article's text as the index holds it."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import JSONResponse

from claire.config import Config
from claire.indexes import http_search
from claire.indexes.registry import Searcher
from claire.web.deps import ConfigDep, RetrieverDep
from claire.web.schemas import ArticleText, ArticleTitles

index = APIRouter(prefix="/api", tags=["index"])


async def search_blocks(retriever: Searcher, config: Config, query: str, k: int) -> list[Any]:
    """The top ``k`` hits for ``query``, searched on a worker thread the way the configuration says."""
    retrieval = config.retrieval
    return await asyncio.to_thread(retriever.search, query, exclude_title=None, k=k, mode=retrieval.mode,
                                   candidates=max(retrieval.candidates, k))


@index.post("/search", response_model=http_search.SearchResponse)
async def post_search(body: http_search.SearchRequest, retriever: RetrieverDep, config: ConfigDep) -> JSONResponse:
    """Ranked blocks of the index (never from ``exclude_title``): the search-endpoint contract
    that ``retrieval.url = "http://HOST:PORT/api/search"`` reads (indexes/http_search.py)."""
    status, payload = await asyncio.to_thread(http_search.answer, retriever, body.model_dump(),
                                              index=config.retrieval.index)
    return JSONResponse(payload, status_code=status)


@index.get("/articles", response_model=ArticleTitles)
async def find_articles(retriever: RetrieverDep, config: ConfigDep,
                        q: str = Query(min_length=1, max_length=300)) -> dict[str, Any]:
    """Article titles of the index that match ``q`` (best first)."""
    hits = await search_blocks(retriever, config, q, 30)
    return {"titles": list(dict.fromkeys(h.block.document_title for h in hits))[:10]}


@index.get("/article", response_model=ArticleText)
async def get_article(retriever: RetrieverDep, config: ConfigDep,
                      title: str = Query(min_length=1, max_length=300)) -> dict[str, Any]:
    """The whole text of an article of the index, in reading order, with its section headings
    (``== History ==``, ``=== Origins ===``), as a scan reads them back: a filtered read of the
    index by title (a search service that offers none: as far as search reaches it)."""
    title = " ".join(title.replace("_", " ").split())
    if hasattr(retriever, "document"):
        blocks = await asyncio.to_thread(retriever.document, title)
        if not blocks and title[:1].islower():  # titles are case-sensitive only after their first letter
            title = title[:1].upper() + title[1:]
            blocks = await asyncio.to_thread(retriever.document, title)
    else:
        hits = await search_blocks(retriever, config, title, 100)
        blocks = [h.block for h in hits if h.block.document_title == title]
    if not blocks:
        raise HTTPException(404, f"no article titled '{title}' in the index")
    return {"title": title, "text": article_text(blocks), "blocks": len(blocks)}


def article_text(blocks: list[Any]) -> str:
    """Blocks in reading order as an article's text, each new section under its heading (its path's
    levels as ``==``, ``===``...; the lead and an infobox without one)."""
    parts: list[str] = []
    shown: list[str] = []
    for block in blocks:
        path = [part.strip() for part in (block.section_title or "").split(" > ") if part.strip()]
        if path in (["Introduction"], ["Infobox"]):
            path = []
        for depth, name in enumerate(path):
            if shown[: depth + 1] != path[: depth + 1]:
                marks = "=" * (depth + 2)
                parts.append(f"{marks} {name} {marks}")
        shown = path
        parts.append(block.content)
    return "\n\n".join(parts)
