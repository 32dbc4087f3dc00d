"""The search engine behind the ``search`` and ``clarify_entity`` tools and both baselines:
retrieval over the corpus excluding the claim's own article, then optional RankGPT reranking.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from concurrent.futures import ThreadPoolExecutor

from claire.indexes.registry import Searcher
from claire.indexes.retriever import Hit
from claire.indexes.rankgpt import RankGPTReranker

# Searches block on the query embedder and the store: they get threads of their own, so that many
# claims in flight can all wait for one batched query encode at once, and nothing else that runs
# in the event loop's default executor (the LLM cache, the predictions file) queues behind them.
_SEARCH_THREADS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="claire-search")


class SearchEngine:
    """A retriever with an optional reranker, searched off the event loop."""

    def __init__(
        self,
        retriever: Searcher,
        *,
        reranker: RankGPTReranker | None = None,
        mode: str = "hybrid",
        candidates: int = 50,
    ):
        self.retriever = retriever
        self.reranker = reranker
        self.mode = mode
        self.candidates = candidates

    async def search(self, query: str, *, exclude_title: str | None = None, k: int = 15) -> list[Hit]:
        """The top ``k`` blocks for ``query``; with reranking, the top of a pool twice as deep."""
        pool = min(max(2 * k, k), max(self.candidates, k)) if self.reranker else k
        search = functools.partial(self.retriever.search, query, exclude_title=exclude_title or None, k=pool,
                                   mode=self.mode, candidates=max(self.candidates, pool))
        hits = await asyncio.get_running_loop().run_in_executor(_SEARCH_THREADS, search)
        if self.reranker and len(hits) > 1:
            hits = await self.reranker.rerank(query, hits)
        return [hit if hit.rank == rank else dataclasses.replace(hit, rank=rank) for rank, hit in enumerate(hits[:k], start=1)]
