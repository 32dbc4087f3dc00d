"""A client for the WikiChat search API — Stanford OVAL's hosted Wikipedia retriever.

The API (``POST <url>`` with ``{"query": [...], "num_blocks": n, ...}``) answers one list of
results per query; each result is a Wikipedia block (``document_title``, ``section_title``,
``content``, ``url``, ``last_edit_date``, ``block_metadata``) with a ``similarity_score``. The
public endpoint covers 25 Wikipedias (this client asks for English by default) and is rate
limited, so 429 and 5xx answers and dropped connections are retried, honouring ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from claire.errors import RetrievalError
from claire.indexes.corpus import block_id, is_table
from claire.domain import Block, BlockType
from claire.indexes.json_http import JsonService
from claire.indexes.retriever import Hit

DEFAULT_URL = "https://search.genie.stanford.edu/wikipedia_20250320"
MAX_BLOCKS = 100  # the API's limit on num_blocks
MAX_QUERIES = 100  # ... and on queries per request
MAX_QUERY_CHARS = 512  # ... and on the length of one query
_KINDS: dict[str, BlockType] = {"text": "text", "table": "table", "infobox": "infobox"}


def _clip(query: str) -> str:
    query = " ".join(query.split())
    if len(query) <= MAX_QUERY_CHARS:
        return query
    return query[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]


def _to_block(result: dict[str, Any]) -> Block:
    title, section, content = result["document_title"], result.get("section_title") or "", result["content"]
    kind = _KINDS.get((result.get("block_metadata") or {}).get("type", "")) or (
        "table" if is_table(content) else "text"
    )
    date = result.get("last_edit_date")
    return Block(
        id=block_id(title, section, content),
        document_title=title,
        section_title=section,
        content=content,
        block_type=kind,
        url=result.get("url") or None,
        last_edit_date=None if date is None else str(date),
    )


class WikiChatRetriever:
    """Search Wikipedia through the WikiChat API; same ``search`` signature as a local Retriever.

    ``language`` restricts results to one Wikipedia (None: all of them); ``rerank`` asks the
    server to rerank with its LLM. ``max_wait`` caps any single wait between attempts.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        timeout: float = 30.0,
        max_attempts: int = 5,
        *,
        language: str | None = "en",
        rerank: bool = False,
        max_wait: float = 60.0,
    ) -> None:
        if max_attempts < 1:
            raise RetrievalError(f"max_attempts must be at least 1 (got {max_attempts})")
        self.url = url
        self.language = language
        self.rerank = rerank
        self.service = JsonService(url, name="WikiChat search", timeout=timeout, max_attempts=max_attempts, base_wait=1.0,
                                   max_wait=max_wait, hint="the public endpoint is rate limited; wait and retry, "
                                                           "or use a local index")

    def search(self, query: str, *, exclude_title: str | None = None, k: int = 15, **_: Any) -> list[Hit]:
        """The ``k`` best blocks for ``query``, none from the article ``exclude_title``.
        Extra keyword arguments (``mode``, ``candidates``) are accepted and ignored."""
        return self.search_many([query], exclude_title=exclude_title, k=k)[0]

    def search_many(
        self, queries: list[str], *, exclude_title: str | None = None, k: int = 15, **_: Any
    ) -> list[list[Hit]]:
        """One result list per query, fetched in as few requests as the API allows."""
        if not 1 <= k <= MAX_BLOCKS:
            raise RetrievalError(f"k must be between 1 and {MAX_BLOCKS} for WikiChat search (got {k})")
        clipped = [_clip(q) for q in queries]
        if not all(clipped):
            raise RetrievalError("a search query is empty")
        # results from the excluded article are dropped afterwards, so ask for more than k
        asked = min(max(2 * k, k + 10), MAX_BLOCKS) if exclude_title else k
        answers: list[list[Hit]] = []
        for start in range(0, len(clipped), MAX_QUERIES):
            batch = clipped[start : start + MAX_QUERIES]
            for results in self._request(batch, asked):
                blocks = [
                    (_to_block(r), float(r.get("similarity_score", 0.0)))
                    for r in results
                    if r["document_title"] != exclude_title
                ]
                answers.append([Hit(b, score, rank) for rank, (b, score) in enumerate(blocks[:k], start=1)])
        return answers

    def _request(self, queries: list[str], num_blocks: int) -> list[list[dict[str, Any]]]:
        body: dict[str, Any] = {"query": queries, "num_blocks": num_blocks}
        if self.language:
            body["search_filters"] = [{"field_name": "language", "filter_type": "eq", "field_value": self.language}]
        if self.rerank:
            body["rerank"] = True
            body["num_blocks_to_rerank"] = min(2 * num_blocks, MAX_BLOCKS)
        payload = self.service.post(body)
        try:
            answers = [item["results"] for item in payload]
            if len(answers) != len(queries) or not all(
                isinstance(r, dict) and "document_title" in r and "content" in r for a in answers for r in a
            ):
                raise ValueError
        except (TypeError, KeyError, ValueError):
            raise RetrievalError(
                f"WikiChat search at {self.url} gave an unexpected answer (expected one results list "
                "per query); check that the URL points to a WikiChat retriever collection"
            ) from None
        return answers

    def close(self) -> None:
        """Close the HTTP connections."""
        self.service.close()

    def __enter__(self) -> WikiChatRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
