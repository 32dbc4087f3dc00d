"""The citations task's records: a claim with the article text around it and the source it cites
(:class:`Citation`), reading them from files, and what the citation checker answers for one
(:class:`CitationResult`, with each source it judged as a :class:`ScoredSource`).

Three shapes are read, each as published:

- WAFER's (``input`` with the ``[CIT]`` mark, ``output[].answer`` — a URL or ``{Failed
  verification}`` — with ``output[].provenance[]`` holding the cited ``url``, ``title`` and
  ``text``, and ``meta.wikipedia_title``/``wikipedia_section``/``sentences``);
- WiCE's entailment-retrieval claims (``claim``, ``evidence``: the cited page's sentences,
  ``label``: ``supported``, ``partially_supported`` or ``not_supported``, and ``meta.id``,
  ``claim_title``, ``claim_section``, ``claim_context``);
- a generic flat shape ``{id, claim, context?, title?, section?, source_url?, source_title?,
  source_text, label?, failed?}`` whose ``label`` is one of :class:`SupportLabel`'s four (with a
  label, ``source_text`` may be empty or missing: a source that could not be had).

Source texts are kept as they come, long, cut short or full of a page's boilerplate: the checker
reads the passages that matter.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from claire.errors import DatasetError
from claire.files import json_records

FAILED_MARK = "failed verification"
CIT = "[CIT]"


class SupportLabel(StrEnum):
    """How a cited source stands to its claim: a gold label, and the checker's answer."""

    SUPPORTED = "supported"
    PARTIAL = "partially supported"
    NOT_SUPPORTED = "not supported"
    UNAVAILABLE = "source unavailable"  # the text is missing, empty, or plainly not the page


_WICE_LABELS = {"supported": SupportLabel.SUPPORTED, "partially_supported": SupportLabel.PARTIAL,
                "not_supported": SupportLabel.NOT_SUPPORTED}
_WICE_TITLE = "(meta data) TITLE:"


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
    label: SupportLabel | None = None  # gold label (evaluation), when the data gives one of the four
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


def _label(value: Any, where: str) -> SupportLabel | None:
    if value is None:
        return None
    try:
        return SupportLabel(" ".join(str(value).replace("_", " ").split()).lower())
    except ValueError:
        raise DatasetError(f"{where}: field 'label' must be one of {', '.join(SupportLabel)}, not {str(value)[:40]!r}") from None


def _failed(label: SupportLabel | None) -> bool | None:
    """Whether a labelled citation fails verification (None: unknown, or the source could not be had)."""
    if label is None or label is SupportLabel.UNAVAILABLE:
        return None
    return label is not SupportLabel.SUPPORTED


def _from_flat(record: dict[str, Any], where: str) -> Citation:
    label = _label(record.get("label"), where)
    text = record.get("source_text")
    if text is None and label is not None:
        text = ""  # a labelled record may have no source text: the checker says it is unavailable
    if not isinstance(text, str) or (not text.strip() and label is None):
        raise DatasetError(f"{where}: field 'source_text' is missing or empty (the cited source's text)")
    failed = record.get("failed")
    if failed is not None and not isinstance(failed, bool):
        raise DatasetError(f"{where}: field 'failed' must be true, false or absent")
    featured = record.get("featured")
    return Citation(
        claim_id=str(record.get("id")), claim=" ".join(_text(record.get("claim")).replace(CIT, " ").split()),
        title=_text(record.get("title")), section=_text(record.get("section")), context=_text(record.get("context")),
        failed=failed if failed is not None else _failed(label), label=label,
        featured=featured if isinstance(featured, bool) else None,
        source=CitedSource(text=text, title=_text(record.get("source_title")), url=_text(record.get("source_url")) or None),
    )


def _from_wice(record: dict[str, Any], where: str) -> Citation:
    evidence = record.get("evidence")
    if not isinstance(evidence, list) or not all(isinstance(line, str) for line in evidence):
        raise DatasetError(f"{where}: field 'evidence' must be a list of the cited page's sentences")
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    raw = record.get("label")
    if raw is not None and raw not in _WICE_LABELS:
        raise DatasetError(f"{where}: field 'label' must be one of {', '.join(_WICE_LABELS)}, not {str(raw)[:40]!r}")
    label = _WICE_LABELS.get(raw) if raw is not None else None
    title = next((line[len(_WICE_TITLE):].strip() for line in evidence[:1] if line.startswith(_WICE_TITLE)), "")
    return Citation(
        claim_id=str(meta.get("id") or record.get("id")), claim=_text(record.get("claim")),
        title=_text(meta.get("claim_title")), section=_text(meta.get("claim_section")).rstrip("."),
        context=" ".join(_text(meta.get("claim_context")).split()), label=label, failed=_failed(label),
        source=CitedSource(text="\n".join(evidence), title=title),
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
        if "input" in record or "output" in record:
            citation = _from_wafer(record, where)
        elif "evidence" in record:
            citation = _from_wice(record, where)
        else:
            citation = _from_flat(record, where)
        if citation.claim_id == "None":
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
    """The outcome of checking one citation: the verdict, how the original source stands to the
    claim (``support``), better sources found, and what the check cost."""

    claim_id: str
    claim: str
    verdict: CitationVerdict | None = None
    support: SupportLabel | None = None
    note: str | None = None  # why the source is taken as unavailable
    threshold: float
    original: ScoredSource
    suggestions: list[ScoredSource] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    retrieved: list[str] = Field(default_factory=list)  # source documents (URL or title) in search order
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
