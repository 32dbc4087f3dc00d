"""Citation verification in the manner of Side: does the cited source support the claim, and what would?

:class:`CitationChecker` splits the cited source into passages and asks the LLM verifier
(``prompts/cite_support.j2``) how well the source's passages most related to the claim support it:
a support score in [0, 1], the best passage and the supporting sentence. It then searches a
*sources index* (any index, e.g. one built with ``claire index build --from-web-docs``) with the
claim and its context — hybrid dense + BM25, plus, when asked, extra queries the LLM writes
(``prompts/cite_queries.j2``, Side's generative query expansion) — groups the hits by source
document, verifies the best candidates with the same prompt and ranks the original among them.
As in Side's verification engine, the cited source is always scored from its own passages and
always ranked, whether or not the search retrieved it.

Verdict (``cite.decision``, :func:`decide`): with ``ranking``, the default and Side's rule, the
citation is ``supported`` when the original ranks first among the sources judged and its score
reaches ``cite.threshold``; with ``threshold``, when its score alone reaches the threshold.
Otherwise ``better source found`` when a candidate that ranks above it reaches the threshold,
else ``not supported``.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from claire.sources.urls import page_key
from claire.agent.system import SystemParts
from claire.settings import CiteConfig
from claire.domain import Block, Evidence, ScoreKind
from claire.errors import DatasetError
from claire.indexes import sparse
from claire.indexes.registry import Searcher
from claire.ingestion.web_docs import source_blocks
from claire.llm.answers import tagged_score, text_of
from claire.llm.client import ChatClient, parsed_of
from claire.prompts.answers import Answer
from claire.usage import track_usage
from claire.prompts import PromptLibrary
from claire.sources.reading import unavailable_reason
from claire.tasks.citations.records import Citation, CitationResult, CitationVerdict, ScoredSource, SupportLabel

RRF_K = 60
_QUERY_TAG = re.compile(r"<\s*query\s*>(.*?)<\s*/\s*query\s*>", re.IGNORECASE | re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NONE = {"", "none", "n/a", "na", "no sentence", "-", "—"}


@dataclass
class _Document:
    """Search hits of one source document, best first."""

    key: str
    title: str
    url: str | None
    blocks: list[Block] = field(default_factory=list)


MAX_EMBEDDED = 200
"""At most this many of a source's blocks, the best by their terms, are embedded to rank them."""


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def _truncate(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def parse_queries(text: str, limit: int) -> list[str]:
    """The search queries of an expansion answer: ``<query>`` tags, else its non-empty lines."""
    found = [q.strip() for q in _QUERY_TAG.findall(text or "")]
    if not found:
        found = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip('"') for line in (text or "").splitlines()]
    queries: list[str] = []
    for query in found:
        query = " ".join(query.split())
        if query and query.lower() not in {q.lower() for q in queries}:
            queries.append(query)
    return queries[:limit]


def quoted_in(quote: str, texts: list[str]) -> bool:
    """Whether ``quote`` stands word for word in one of ``texts`` (whitespace and the quote's
    surrounding quotation marks aside)."""
    wanted = " ".join(quote.strip().strip("\"“”'").split())
    return bool(wanted) and any(wanted in " ".join(text.split()) for text in texts)


def stance_of(raw: str | None, score: float | None, threshold: float) -> str | None:
    """Where the source stands (states, silent, contradicts): the answer's stance, else read from its
    support score (states at the threshold or above, else silent)."""
    raw = (raw or "").strip().lower()
    for stance in ("contradicts", "states", "silent"):
        if raw.startswith(stance[:6]):
            return stance
    if score is None:
        return None
    return "states" if score >= threshold else "silent"


def _best_passage_number(raw: str | None, count: int) -> int:
    match = re.search(r"\d+", raw or "")
    number = int(match.group()) if match else 1
    return number if 1 <= number <= count else 1


@dataclass(kw_only=True, eq=False)
class CitationChecker:
    """Verifies a citation and searches a sources index for better ones (see the module docstring).
    A System like the others (``agent.system = "cite"``), opened by :func:`claire.agent.runtime.open_system`
    over the sources index; it answers the citations task only."""

    name = "cite"
    score_kind: ClassVar[ScoreKind] = "probability"  # the original source's support score in [0, 1]
    answers_task: ClassVar[str] = "citations"
    reads: ClassVar[tuple[str, ...]] = ("llm.", "retrieval.", "cite.", "prompts.")

    llm: ChatClient
    retriever: Searcher
    prompts: PromptLibrary
    settings: CiteConfig
    mode: str = "hybrid"
    candidates: int = 50  # passages the sources index is searched for, per query

    @classmethod
    def from_config(cls, parts: SystemParts) -> "CitationChecker":
        """The checker over the sources index (``cite.*``; its own search, no RankGPT)."""
        retrieval = parts.config.retrieval
        return cls(llm=parts.llm, retriever=parts.retriever, prompts=parts.prompts, settings=parts.config.cite,
                   mode=retrieval.mode, candidates=retrieval.candidates)

    # -- queries and search ------------------------------------------------------------------
    def query(self, citation: Citation) -> str:
        """The search query: the claim, the article and section it is in, then its context."""
        heading = " ".join(part for part in (citation.title, citation.section) if part)
        context = _truncate(citation.context, self.settings.context_chars) if self.settings.context_chars else ""
        return " ".join(part for part in (citation.claim.strip(), heading, context) if part)

    async def expand(self, citation: Citation) -> list[str]:
        """Extra search queries written by the LLM (generative query expansion)."""
        messages = self.prompts.render(
            "cite_queries", claim=citation.claim, title=citation.title, section=citation.section,
            context=_truncate(citation.context, max(self.settings.context_chars, 200)), max_queries=self.settings.max_queries,
        )
        answer = await self.llm.ainvoke(messages)
        typed = parsed_of(answer)
        return parse_queries("\n".join(typed.queries) if typed is not None else text_of(answer), self.settings.max_queries)

    async def search(self, queries: list[str]) -> list[_Document]:
        """Source documents found by the queries, best first: passages fused across queries with
        reciprocal-rank fusion, then grouped by document (URL, or title when there is none)."""
        k = self.settings.search_k
        results = await asyncio.gather(*[
            asyncio.to_thread(self.retriever.search, q, k=k, mode=self.mode, candidates=max(self.candidates, k)) for q in queries
        ])
        fused: dict[str, float] = {}
        blocks: dict[str, Block] = {}
        for hits in results:
            for hit in hits:
                blocks.setdefault(hit.block.id, hit.block)
                fused[hit.block.id] = fused.get(hit.block.id, 0.0) + 1.0 / (RRF_K + hit.rank)
        documents: dict[str, _Document] = {}
        for block_id in sorted(fused, key=lambda b: (-fused[b], b)):
            block = blocks[block_id]
            key = page_key(block.url) or block.document_title
            document = documents.setdefault(key, _Document(key=key, title=block.document_title, url=block.url))
            document.blocks.append(block)
        return list(documents.values())

    # -- the original's passages ---------------------------------------------------------------
    def best_passages(self, query: str, blocks: list[Block]) -> list[Block]:
        """The source's passages most related to the query (hybrid: dense + term overlap, RRF)."""
        limit = self.settings.passages_per_source
        if len(blocks) <= limit:
            return blocks
        terms = self._term_ranking(query, blocks)
        rankings = [terms]
        embedder = getattr(self.retriever, "embedder", None)
        if embedder is not None:  # only the best by terms are embedded: a 3 MB page is thousands of blocks
            candidates = terms[:MAX_EMBEDDED]
            vectors = embedder.encode([blocks[i].embed_text() for i in candidates])
            similarity = vectors @ embedder.encode_query(query)
            rankings.append([candidates[int(i)] for i in np.argsort(-similarity, kind="stable")])
        fused = [0.0] * len(blocks)
        for ranking in rankings:
            for rank, index in enumerate(ranking, start=1):
                fused[index] += 1.0 / (RRF_K + rank)
        order = sorted(range(len(blocks)), key=lambda i: (-fused[i], i))
        return [blocks[i] for i in order[:limit]]

    @staticmethod
    def _term_ranking(query: str, blocks: list[Block]) -> list[int]:
        terms = sparse.query_vector(query)
        wanted = set(terms.indices)
        scores = []
        for block in blocks:
            vector = sparse.document_vector(block.content)
            scores.append(sum(v for i, v in zip(vector.indices, vector.values) if i in wanted))
        return sorted(range(len(blocks)), key=lambda i: (-scores[i], i))

    # -- verification ------------------------------------------------------------------------
    async def verify(self, citation: Citation, source: ScoredSource, passages: list[Block], *,
                     value: str | None = None, other_value: str | None = None) -> ScoredSource:
        """Fill ``source`` with the verifier's support score, best passage, supporting sentence (kept
        only when it stands word for word in the source's passages) and stance; ``value`` and
        ``other_value``: the detail that sets the claim apart and what the other side of a
        contradiction says instead (resolving one)."""
        view = [Evidence(n=n, block_id=block.id, document_title=block.document_title, content=block.content)
                for n, block in enumerate(passages, start=1)]
        prompt = self.prompts.render(
            "cite_support", claim=citation.claim, title=citation.title, section=citation.section,
            context=_truncate(citation.context, 1500), source=source, passages=view, value=value,
            other_value=other_value,
        )
        asked = await self.llm.ask(
            prompt, lambda answer: (getattr(answer, "support_score", None) if isinstance(answer, Answer)
                                    else tagged_score(answer, "support_score")),
            follow_up=lambda problem, detail="": self.prompts.render("follow_up", wanted="support_score", problem=problem, detail=detail))
        score = asked.value
        sentence = asked.field("supporting_sentence")
        if sentence is not None and sentence.strip().strip(".").lower() in _NONE:
            sentence = None
        if sentence is not None and not quoted_in(sentence, [block.content for block in passages]):
            sentence = None  # a quote the source does not hold word for word is never shown as the source's
        best = passages[_best_passage_number(asked.field("best_passage"), len(passages)) - 1] if passages else None
        return source.model_copy(update={
            "score": score,
            "passage": best.content if best else None,
            "sentence": sentence,
            "stance": stance_of(asked.field("stance"), score, self.settings.threshold),
            "analysis": asked.field("analysis"),
            "error": asked.failure("the verifier", "support_score"),
        })

    # -- the whole check ---------------------------------------------------------------------
    @staticmethod
    def _is_original(document: _Document, citation: Citation, original_text: str) -> bool:
        """Whether a found document is the cited source itself: the same URL when both have one,
        else the same text (its passages lie in the source, or the source's sentences in them)."""
        url = page_key(citation.source.url)
        if url and document.url:
            return page_key(document.url) == url
        if all(_squash(block.content) in original_text for block in document.blocks):
            return True
        sentences = [s for s in (_squash(s) for s in _SENTENCE.split(citation.source.text)) if len(s) >= 20]
        found = _squash(" ".join(block.content for block in document.blocks))
        return bool(sentences) and sum(s in found for s in sentences) >= 0.8 * len(sentences)

    async def assess(self, citation: Citation) -> CitationResult:
        """Verify the original source, search for candidates, verify and rank them, and decide."""
        started = time.perf_counter()
        settings = self.settings
        missing = unavailable_reason(citation.source.text)
        if missing is not None:  # nothing to read: no search, no call
            original = ScoredSource(url=citation.source.url, title=citation.source.title or (citation.source.url or "cited source"),
                                    original=True)
            return CitationResult(claim_id=citation.claim_id, claim=citation.claim, threshold=settings.threshold,
                                  original=original, support=SupportLabel.UNAVAILABLE, note=missing,
                                  latency_s=round(time.perf_counter() - started, 3))
        with track_usage() as usage:
            source = citation.source
            blocks = source_blocks(source.text, url=source.url, title=source.title, max_words=settings.passage_words)
            if not blocks:
                raise DatasetError("the cited source has no text passages (only headings or tables?)")
            query = self.query(citation)
            queries = [query]
            if settings.expand_queries:
                queries += [q for q in await self.expand(citation) if q.lower() != query.lower()]
            documents = await self.search(queries)
            original_text = _squash(source.text)
            original = ScoredSource(url=source.url, title=source.title or (source.url or "cited source"), original=True)
            candidates: list[tuple[ScoredSource, list[Block]]] = []
            for rank, document in enumerate(documents, start=1):
                if self._is_original(document, citation, original_text):
                    original.retrieval_rank = original.retrieval_rank or rank
                elif len(candidates) < settings.candidates:
                    candidates.append((ScoredSource(url=document.url, title=document.title, retrieval_rank=rank),
                                       document.blocks[: settings.passages_per_source]))
            own = await asyncio.to_thread(self.best_passages, query, blocks)
            judged = await asyncio.gather(
                self.verify(citation, original, own),
                *[self.verify(citation, candidate, passages) for candidate, passages in candidates],
            )
        original, others = judged[0], list(judged[1:])
        # By support score, the original always among them (scored from its own passages even when
        # the search missed it); a tie goes to the source retrieved first (it favours neither the
        # original nor a candidate); an original the search missed comes last among equals.
        ranked = sorted(
            (s for s in judged if s.score is not None),
            key=lambda s: (-(s.score or 0.0), s.retrieval_rank or 10**9),
        )
        for position, scored in enumerate(ranked, start=1):
            scored.rank = position
        suggestions = sorted((s for s in others if s.score is not None), key=lambda s: s.rank or 0)[: settings.suggestions]
        result = CitationResult(
            claim_id=citation.claim_id, claim=citation.claim, threshold=settings.threshold, original=original,
            suggestions=suggestions, queries=queries, retrieved=[d.url or d.title for d in documents],
            usage=usage.to_dict(), latency_s=round(time.perf_counter() - started, 3), error=original.error,
        )
        result.verdict = decide(original, suggestions, settings.threshold, rule=settings.decision)
        result.support = support_of(original, settings.threshold, settings.partial_support)
        return result


def support_of(original: ScoredSource, threshold: float, partial: float) -> SupportLabel | None:
    """How the cited source stands to its claim, from its support score and stance: supported at
    ``threshold`` or above, partially supported from ``partial`` (some of the claim stated, the rest
    missing), else not supported; a source that gives another value never supports (None: no score)."""
    if original.score is None:
        return None
    if original.stance == "contradicts":
        return SupportLabel.NOT_SUPPORTED
    if original.score >= threshold:
        return SupportLabel.SUPPORTED
    return SupportLabel.PARTIAL if original.score >= partial else SupportLabel.NOT_SUPPORTED


def decide(original: ScoredSource, suggestions: list[ScoredSource], threshold: float,
           rule: str = "threshold") -> CitationVerdict | None:
    """supported / better source found / not supported (None when the original has no score).

    ``threshold``: the original supports the claim when its score reaches the threshold.
    ``ranking`` (Side's rule): it does when the verifier ranks it first among the sources judged
    (the original, retrieved or not, and the candidates) and its score reaches the threshold.
    Ranking first is not enough on its own: when every source scores below the threshold, nothing
    supports the claim (Side reads the original's score itself as the sign of a failed
    verification) and the verdict says so."""
    if original.score is None:
        return None
    if rule == "ranking":
        if original.rank == 1 and original.score >= threshold:
            return "supported"
        if any(s.score is not None and s.score >= threshold and (s.rank or 0) < (original.rank or 10**9) for s in suggestions):
            return "better source found"
        return "not supported"
    if original.score >= threshold:
        return "supported"
    if any(s.score is not None and s.score >= threshold and s.score > original.score for s in suggestions):
        return "better source found"
    return "not supported"
