"""The citations task's records: a claim with the article text around it and the source it cites
(:class:`Citation`), reading them from files, and what the citation checker answers for one
(:class:`CitationResult`, with each source it judged as a :class:`ScoredSource`).

WAFER's own shape is read as published (``input`` with the ``[CIT]`` mark, ``output[].answer`` —
a URL or ``{Failed verification}`` — with ``output[].provenance[]`` holding the cited ``url``,
``title`` and ``text``, and ``meta.wikipedia_title``/``wikipedia_section``/``sentences``); so is a
flat shape ``{id, claim, context?, title?, section?, source_url?, source_title?, source_text, failed?}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from claire.errors import ConfigError, DatasetError
from claire.files import json_records

FAILED_MARK = "failed verification"
CIT = "[CIT]"


class CitedSource(BaseModel):
    """The source a claim cites: its text, and its title and URL when known."""

    text: str
    title: str = ""
    url: str | None = None


class Citation(BaseModel):
    """A claim with the article text around it and the source it cites."""

    claim_id: str = "cite"
    claim: str
    title: str = ""  # the Wikipedia article
    section: str = ""
    context: str = ""
    source: CitedSource
    failed: bool | None = None  # gold label (evaluation): the citation failed verification
    featured: bool | None = None  # the record comes from a featured article (when the data marks it)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _from_wafer(record: dict[str, Any], where: str) -> Citation:
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    text = _text(record.get("input"))
    sentences = [s for s in meta.get("sentences") or [] if isinstance(s, str) and s.strip()]
    claim = sentences[-1] if sentences else text
    claim = " ".join(claim.replace(CIT, " ").split())
    context = " ".join(text.replace(CIT, " ").split())
    if claim and context.endswith(claim):
        context = context[: -len(claim)].strip()
    outputs = record.get("output")
    if not isinstance(outputs, list) or not outputs:
        raise DatasetError(f"{where}: field 'output' must be a non-empty list (the cited source)")
    answers = [_text(o.get("answer")) for o in outputs if isinstance(o, dict)]
    provenance = next((p for o in outputs if isinstance(o, dict) for p in (o.get("provenance") or []) if isinstance(p, dict)), None)
    if provenance is None:
        raise DatasetError(f"{where}: no 'output[].provenance' entry names the cited source")
    if not _text(provenance.get("text")):
        raise DatasetError(f"{where}: the cited source has no text (WAFER ships URLs only: fill 'provenance.text' "
                           "with the page text, e.g. with Side's download script)")
    failed = any(FAILED_MARK in a.lower() for a in answers) if answers else None
    featured = meta.get("featured")
    return Citation(
        claim_id=str(record.get("id")), claim=claim, title=_text(meta.get("wikipedia_title")),
        section=_text(meta.get("wikipedia_section")), context=context, failed=failed,
        featured=featured if isinstance(featured, bool) else None,
        source=CitedSource(text=provenance["text"], title=_text(provenance.get("title")),
                           url=_text(provenance.get("url")) or None),
    )


def _from_flat(record: dict[str, Any], where: str) -> Citation:
    text = record.get("source_text")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: field 'source_text' is missing or empty (the cited source's text)")
    failed = record.get("failed")
    if failed is not None and not isinstance(failed, bool):
        raise DatasetError(f"{where}: field 'failed' must be true, false or absent")
    featured = record.get("featured")
    return Citation(
        claim_id=str(record.get("id")), claim=" ".join(_text(record.get("claim")).replace(CIT, " ").split()),
        title=_text(record.get("title")), section=_text(record.get("section")), context=_text(record.get("context")),
        failed=failed, featured=featured if isinstance(featured, bool) else None, source=CitedSource(text=text, title=_text(record.get("source_title")),
                                          url=_text(record.get("source_url")) or None),
    )


def load_citations(path: str | Path) -> list[Citation]:
    """Read WAFER-style records (JSONL, or a JSON array). A bad record raises DatasetError
    naming the file and line (or record index) and the problem."""
    path = Path(path)
    items = [(f"{path}:{entry.line}" if entry.line else f"{path}: {entry.where}", entry.value)
             for entry in json_records(path, what="citations", hint="expected WAFER-style records, one a line")]
    citations: list[Citation] = []
    seen: dict[str, str] = {}
    for where, record in items:
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        citation = _from_wafer(record, where) if "input" in record or "output" in record else _from_flat(record, where)
        if record.get("id") is None:
            citation.claim_id = where.rsplit(":", 1)[-1].replace(" record ", "").strip()
        if not citation.claim:
            raise DatasetError(f"{where}: the claim is empty (field 'input' or 'claim')")
        if citation.claim_id in seen:
            raise DatasetError(f"{where}: id '{citation.claim_id}' also appears at {seen[citation.claim_id]}")
        seen[citation.claim_id] = where
        citations.append(citation)
    if not citations:
        raise DatasetError(f"{path} holds no records")
    return citations


def select_records(records: list[Citation], *, ids: str | None, limit: int | None, dataset: Path) -> list[Citation]:
    """The records named by ``ids`` (comma-separated; an unknown id is an error), then the first ``limit``."""
    if ids:
        wanted = {i.strip() for i in ids.split(",") if i.strip()}
        unknown = sorted(wanted - {r.claim_id for r in records})
        if unknown:
            raise ConfigError(f"--ids names records not in {dataset}: {', '.join(unknown)}")
        records = [r for r in records if r.claim_id in wanted]
    return records[:limit] if limit is not None else records


VERDICTS = ("supported", "not supported", "better source found")
CitationVerdict = Literal["supported", "not supported", "better source found"]


class ScoredSource(BaseModel):
    """One source judged by the verifier: the original or a candidate from the index."""

    url: str | None = None
    title: str = ""
    original: bool = False
    score: float | None = None  # support score in [0, 1]
    rank: int | None = None  # among the original and the candidates, by support score (1 = best)
    retrieval_rank: int | None = None  # the document's rank in the search results (None: not retrieved)
    passage: str | None = None  # the passage the verifier found most supportive
    sentence: str | None = None  # the supporting sentence it quoted (kept only when the source holds it word for word)
    stance: Literal["states", "silent", "contradicts"] | None = None  # where the source stands on the claim's detail
    analysis: str | None = None
    error: str | None = None


class CitationResult(BaseModel):
    """The outcome of checking one citation: the verdict, the original source judged, better
    sources found, and what the check cost."""

    claim_id: str
    claim: str
    verdict: CitationVerdict | None = None
    threshold: float
    original: ScoredSource
    suggestions: list[ScoredSource] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    retrieved: list[str] = Field(default_factory=list)  # source documents (URL or title) in search order
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
