"""The search engine behind the ``search`` and ``clarify_entity`` tools and both baselines:
retrieval over the corpus excluding the claim's own article, then optional RankGPT reranking.

Across language editions (``editions``: the other editions a check also searches, of an index
that holds several), a search reaches the fact's own edition and those, never the fact's own
article in its own edition, and puts the passages of that article's counterparts (the
interlanguage links its blocks carry) first: where another edition tells the same story is the
first place to look. With no editions named, a search keeps to the fact's own edition (a block
that names no language is of it), so a multilingual index is searched one edition at a time
unless a check asks for more.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from claire.languages import edition_of

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
        language: str = "en",
        editions: Sequence[str] = (),
    ):
        self.retriever = retriever
        self.reranker = reranker
        self.mode = mode
        self.candidates = candidates
        self.language = language  # the edition of a block that names none
        self.editions = tuple(editions)  # a fact's own edition among them is not "another" one

    async def search(self, query: str, *, exclude_title: str | None = None, k: int = 15,
                     language: str | None = None) -> list[Hit]:
        """The top ``k`` blocks for ``query`` (``language``: the fact's edition, default the index's);
        with reranking, the top of a pool twice as deep."""
        pool = min(max(2 * k, k), max(self.candidates, k)) if self.reranker else k
        own = language or self.language
        # the named editions, and for a fact of another edition the index's own one too
        others = tuple(e for e in dict.fromkeys([self.language, *self.editions]) if e != own) if self.editions else ()
        if others:
            hits = await self._across_editions(query, exclude_title, own, others, pool)
        else:
            search = functools.partial(self.retriever.search, query, exclude_title=exclude_title or None, k=pool,
                                       mode=self.mode, candidates=max(self.candidates, pool))
            hits = await asyncio.get_running_loop().run_in_executor(_SEARCH_THREADS, search)
            hits = [hit for hit in hits if edition_of(hit.block, self.language) == own]
        if self.reranker and len(hits) > 1:
            hits = await self.reranker.rerank(query, hits)
        return [hit if hit.rank == rank else dataclasses.replace(hit, rank=rank) for rank, hit in enumerate(hits[:k], start=1)]

    async def _across_editions(self, query: str, title: str | None, own: str, others: tuple[str, ...],
                               pool: int) -> list[Hit]:
        """A search of the fact's edition and the ``others``: a deeper pool (the fact's own article is
        left out here, not by the index, since its counterparts may share its title), the
        counterparts' passages first."""
        wanted = {own, *others}
        depth = max(self.candidates, 4 * pool)
        search = functools.partial(self.retriever.search, query, exclude_title=None, k=depth, mode=self.mode,
                                   candidates=depth)
        loop = asyncio.get_running_loop()
        hits = await loop.run_in_executor(_SEARCH_THREADS, search)
        counterparts = await loop.run_in_executor(_SEARCH_THREADS, self.counterparts, title, own, others) if title else {}
        kept = [hit for hit in hits if edition_of(hit.block, self.language) in wanted
                and not (hit.block.document_title == title and edition_of(hit.block, self.language) == own)]
        first = [hit for hit in kept if counterparts.get(edition_of(hit.block, self.language)) == hit.block.document_title]
        return (first + [hit for hit in kept if hit not in first])[:pool]

    def counterparts(self, title: str, language: str, editions: Sequence[str]) -> dict[str, str]:
        """The titles of article ``title`` (of edition ``language``) in ``editions``, from the
        interlanguage links its blocks carry (an index build follows links both ways:
        :func:`~claire.indexes.corpus.linked_both_ways`)."""
        document = getattr(self.retriever, "document", None)
        if document is None:
            return {}
        found: dict[str, str] = {}
        for block in document(title):
            if edition_of(block, self.language) == language:
                found.update({lang: other for lang, other in (block.counterparts or {}).items() if lang in editions})
        return found
