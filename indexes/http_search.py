"""Searching an index that another CLAIRE process serves over HTTP (``claire serve``).

One process holds the index and answers searches; any number of CLI commands on any machine use
it as their search backend by setting ``retrieval.url`` to its search endpoint, a URL whose path
ends in ``/api/search`` (any other ``retrieval.url`` is a Qdrant server). The contract, JSON both
ways:

``POST <url>`` with ``{"query": str, "k": int, "exclude_title": str | null,
"mode": "hybrid" | "dense" | "bm25", "candidates": int}`` (only ``query`` is required; ``k``
defaults to 15, ``mode`` to hybrid, ``candidates`` to 50) answers ``200`` with
``{"index": str, "results": [{"rank": int, "score": float, "block": {"id", "document_title",
"section_title", "content", "block_type", "url"?, "last_edit_date"?}}]}``, best first, never a
block of ``exclude_title``. A request it cannot serve answers ``4xx`` with ``{"detail": str}``
(shown to the user as is); ``429`` and ``5xx`` answers are retried.

:func:`answer` implements the server side over any local searcher, so the server's route and
this client cannot drift apart; :class:`HttpSearcher` is the client.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator

from claire.errors import RetrievalError
from claire.domain import Block
from claire.files import LONE_SURROGATE, is_text
from claire.indexes.json_http import JsonService
from claire.indexes.retriever import Hit

ENDPOINT_PATH = "/api/search"
MAX_K = 100


class SearchRequest(BaseModel):
    """The body of ``POST /api/search``."""

    query: str = Field(min_length=1)
    k: int = Field(15, ge=1, le=MAX_K)
    exclude_title: str | None = None
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    candidates: int = Field(50, ge=1, le=1000)

    @field_validator("query", "exclude_title")
    @classmethod
    def _is_text(cls, value: str | None) -> str | None:
        if value is not None and not is_text(value):
            raise ValueError(f"holds {LONE_SURROGATE}")
        return value


class SearchResult(BaseModel):
    """One ranked block of a search answer."""

    rank: int
    score: float
    block: Block


class SearchResponse(BaseModel):
    """The answer of ``POST /api/search``."""

    index: str
    results: list[SearchResult]


def is_search_endpoint(url: str | None) -> bool:
    """Whether ``url`` names a CLAIRE search endpoint rather than a Qdrant server."""
    if not url or not url.startswith(("http://", "https://")):
        return False
    return urlsplit(url).path.rstrip("/").endswith(ENDPOINT_PATH)


class _LocalSearcher(Protocol):
    def search(self, query: str, *, exclude_title: str | None, k: int, mode: Any, candidates: int) -> list[Hit]: ...


def answer(searcher: _LocalSearcher, body: Any, *, index: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) for one search request — the server side of the contract.
    A malformed request is a 422, a search the index cannot answer a 400."""
    try:
        request = SearchRequest.model_validate(body)
    except ValidationError as error:
        item = error.errors()[0]
        where = ".".join(str(part) for part in item["loc"]) or "body"
        return 422, {"detail": f"{where}: {item['msg']}"}
    try:
        hits = searcher.search(
            request.query, exclude_title=request.exclude_title, k=request.k, mode=request.mode,
            candidates=request.candidates,
        )
    except RetrievalError as error:
        return 400, {"detail": str(error)}
    results = [SearchResult(rank=h.rank, score=h.score, block=h.block) for h in hits]
    return 200, SearchResponse(index=index, results=results).model_dump(mode="json", exclude_none=True)


class HttpSearcher:
    """Search through a CLAIRE search endpoint; same ``search`` signature as a local Retriever."""

    def __init__(self, url: str, timeout: float = 30.0, max_attempts: int = 4, max_wait: float = 10.0) -> None:
        if not is_search_endpoint(url):
            raise RetrievalError(f"{url} is not a CLAIRE search endpoint (its path must end in {ENDPOINT_PATH})")
        self.url = url
        self.service = JsonService(url, name="search server", timeout=timeout, max_attempts=max(1, max_attempts),
                                   max_wait=max_wait, hint="is `claire serve` running there?")
        self.index: str | None = None  # the served index's name, once known

    def search(
        self,
        query: str,
        *,
        exclude_title: str | None = None,
        k: int = 15,
        mode: str = "hybrid",
        candidates: int = 50,
    ) -> list[Hit]:
        """The ``k`` best blocks for ``query`` from the served index, none from ``exclude_title``."""
        if not query.strip():
            raise RetrievalError("the search query is empty")
        if not 1 <= k <= MAX_K:
            raise RetrievalError(f"k must be between 1 and {MAX_K} for a search server (got {k})")
        body = {"query": query, "k": k, "exclude_title": exclude_title, "mode": mode, "candidates": candidates}
        payload = self.service.post(body)
        try:
            response = SearchResponse.model_validate(payload)
        except ValidationError:
            raise RetrievalError(
                f"search server at {self.url} gave an answer that is not a CLAIRE search result; "
                f"check that retrieval.url points at a `claire serve` {ENDPOINT_PATH} endpoint"
            ) from None
        self.index = response.index
        return [Hit(r.block, r.score, r.rank) for r in response.results if r.block.document_title != exclude_title]

    def close(self) -> None:
        """Close the HTTP connections."""
        self.service.close()

    def __enter__(self) -> HttpSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
