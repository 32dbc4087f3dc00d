"""Choosing the search backend — what the agent's search tool is handed.

Backend ``qdrant`` searches a named index: embedded under the index root or, when a Qdrant
``url`` is configured, a collection on that server — or, when ``url`` is a CLAIRE search
endpoint (``.../api/search``, see :mod:`.http_search`), the index that ``claire serve`` serves; the embedded ``demo`` index is built from the
bundled demo corpus the first time it is asked for. Backend ``wikichat`` searches Wikipedia
through the remote WikiChat API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, TypedDict, Unpack

from claire.errors import RetrievalError
from claire.indexes.http_search import HttpSearcher, is_search_endpoint
from claire.indexes.retriever import MULTILINGUAL_DEMO, Hit, ensure_demo_index, open_retriever
from claire.indexes.store import SearchMode
from claire.indexes.wikichat import DEFAULT_URL, WikiChatRetriever

DEMO = "demo"


class SearchOptions(TypedDict, total=False):
    """What a search may be told besides its query (each backend has the same defaults: no article
    excluded, 15 blocks, hybrid, 50 candidates)."""

    exclude_title: str | None
    k: int
    mode: SearchMode
    candidates: int


class Searcher(Protocol):
    """What every search backend offers: ranked blocks for a query, excluding one article."""

    def search(self, query: str, **options: Unpack[SearchOptions]) -> list[Hit]:
        """Ranked blocks for ``query``, none from the article ``exclude_title``."""
        ...

    def close(self) -> None:
        """Release the backend."""
        ...


def open_searcher(
    backend: Literal["qdrant", "wikichat"] = "qdrant",
    *,
    index: str = DEMO,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    embedder: str | None = None,
    wikichat_url: str = DEFAULT_URL,
    timeout: float = 30.0,
    max_attempts: int = 5,
    query_runtime: str = "auto",
) -> Searcher:
    """The searcher for ``backend``. For ``qdrant`` the index is opened with the embedder it was
    built with; ``embedder``, when given, must match it (and builds the demo index); queries are
    embedded by ``query_runtime`` (see :mod:`.query_encoders`)."""
    if backend == "wikichat":
        return WikiChatRetriever(wikichat_url, timeout, max_attempts)
    if backend != "qdrant":
        raise RetrievalError(f"unknown search backend {backend!r}; use qdrant or wikichat")
    if is_search_endpoint(url):
        return HttpSearcher(url, timeout)  # type: ignore[arg-type]
    if index in (DEMO, MULTILINGUAL_DEMO) and url is None:
        ensure_demo_index(root, embedder, name=index)
    return open_retriever(index, root=root, embedder_spec=embedder, url=url, api_key=api_key, query_runtime=query_runtime)
