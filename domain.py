"""The words every part of CLAIRE shares, each with one home here.

- :class:`Passage` — a passage of a Wikipedia article, the one passage model: a claim's context,
  a corpus block (:class:`Block`, the same passage with its id required) and a numbered piece of
  evidence (:class:`Evidence`, the same passage with its number [n] and search score) are all
  Passages; a table or an infobox is a passage whose ``block_type`` says so, and its citable
  pieces are :class:`BlockElement` s;
- :class:`Reference` — a source a passage cites (url, title, site or publisher, date, kind): a
  block and each of its elements carry the references that back them (``citations``); a passage
  from an old index has none (``None``);
- :class:`Claim` — one fact to check, with the passage it came from;
- :class:`TraceItem` — one step of research, in WikiCollide's ``agent_trace`` shape;
- :class:`Assessment` — a system's answer for one claim;
- admission — :func:`admit`, the one check an answer passes where it enters the domain: a score that
  is not a finite number of its kind's range (a probability in [0, 1], a count from 0) is no score
  but a failed fact saying so, and an oversized explanation, evidence or trace is cut, marked;
- the verdict rule — :func:`decide`, :func:`flags` and :func:`outcome` (consistent, flagged or failed),
  and :func:`recorded_outcome`, the same read back from what was stored: a score flags a claim by the kind of score
  it is (:data:`ScoreKind`), which the system that emits it declares. A probability-like score in
  [0, 1] flags above the threshold (exactly the threshold is not flagged, as the paper reads its
  scores); a count (the NLI pipeline's REFUTES passages) flags from the threshold on.

A leaf module: it imports only pydantic (and numpy for arrays of scores, when given them), so
every other room may import it.
"""

from __future__ import annotations

import math
import re
from urllib.parse import quote, urlsplit
from typing import Any, Iterable, Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, computed_field, field_validator

from claire.validation import not_blank

Consistency = Literal["consistent", "inconsistent"]
"""A verdict: whether the corpus contradicts the claim."""

ScoreKind = Literal["probability", "count"]
"""What a system's score is: a probability-like inconsistency score in [0, 1], or a count (the NLI
pipeline's REFUTES passages)."""

BlockType = Literal["text", "table", "infobox"]


# -- the verdict rule ----------------------------------------------------------------------------
def flags(score: Any, threshold: Any, kind: ScoreKind = "probability") -> Any:
    """Whether a score (or each of an array of scores) flags its claim as inconsistent: a
    probability when it is *above* the threshold (0.5 is not flagged at 0.5), a count when it
    reaches it (one REFUTES passage at threshold 1)."""
    return score >= threshold if kind == "count" else score > threshold


Outcome = Literal["consistent", "flagged", "failed"]
"""How a check of one claim ended, as every surface shows it."""


def outcome(score: float | None, threshold: float, kind: ScoreKind = "probability", error: str | None = None) -> Outcome:
    """How a check ended: ``failed`` when it met an error (research cut short by an outage or a
    failed step is a failure to retry, never a verdict, whatever score it reached) or produced no
    score, else ``flagged`` or ``consistent`` by :func:`flags`."""
    if error is not None or score is None:
        return "failed"
    return "flagged" if flags(score, threshold, kind) else "consistent"


def recorded_outcome(record: Any) -> Outcome:
    """How a stored check ended — a prediction line, a stored fact, an Assessment's data — read from
    what was decided when it was written (its verdict, by :func:`outcome`; FEVEROUS's REFUTES label
    flags too): an error, or no verdict and no label, is a failure."""
    get = record.get if isinstance(record, dict) else lambda key: getattr(record, key, None)
    if get("error") is not None or get("status") == "error" or (get("verdict") is None and get("label") is None):
        return "failed"
    return "flagged" if get("verdict") == "inconsistent" or get("label") == "REFUTES" else "consistent"


def impossible_score(score: Any, kind: Any = "probability") -> str | None:
    """Why ``score`` cannot be a score of ``kind`` (None when it can, or when there is none): not a
    number, not finite, or outside the kind's range."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return f"a score that is not a number ({type(score).__name__} {str(score)[:40]!r})"
    if not math.isfinite(score):
        return f"a score that is not a finite number ({score})"
    if kind == "count":
        return None if score >= 0 else f"a negative count ({score:g})"
    if kind not in ("probability", None):
        return f"a score of an unknown kind ({str(kind)[:40]!r})"
    return None if 0.0 <= score <= 1.0 else f"a score outside [0, 1] ({score:g})"


CUT_MARK = "… [cut by CLAIRE: {n:,} more characters]"
"""What stands where an oversized text of an answer was cut."""


def _cut(text: Any, limit: int) -> Any:
    if isinstance(text, str) and len(text) > limit:
        return text[:limit] + CUT_MARK.format(n=len(text) - limit)
    return text


def admit(answer: Any, *, system: str = "the system", max_chars: int = 100_000, max_items: int = 500) -> Any:
    """An answer as it may enter the domain. An Assessment (anything with a ``score_kind``) whose
    score is impossible (:func:`impossible_score`) becomes a failed fact with that reason, no score
    and no verdict; its reasoning, evidence, trace and details are cut to ``max_chars`` characters a
    text and ``max_items`` items a list, what was cut marked (``details["cut"]``). Other answers pass."""
    if not hasattr(answer, "score_kind"):
        return answer
    problem = impossible_score(getattr(answer, "score", None), getattr(answer, "score_kind", "probability"))
    if problem is not None:
        answer.score, answer.verdict, answer.probability = None, None, None
        answer.error = answer.error or f"{system} gave {problem}"
    cut: list[str] = []
    for name in ("reasoning", "restated_claim", "error", "claim_text"):
        value = getattr(answer, name, None)
        if isinstance(value, str) and len(value) > max_chars:
            setattr(answer, name, _cut(value, max_chars))
            cut.append(name)
    for name in ("evidence", "trace", "clarifications", "explanations", "reported", "evidence_elements"):
        items = getattr(answer, name, None)
        if isinstance(items, list) and len(items) > max_items:
            setattr(answer, name, items[:max_items])
            cut.append(f"{name} ({len(items) - max_items} items)")
    evidence = getattr(answer, "evidence", None) or []
    if any(len(getattr(e, "content", "") or "") > max_chars for e in evidence):
        answer.evidence = [e.model_copy(update={"content": _cut(e.content, max_chars)}) for e in evidence]
        cut.append("evidence text")
    trace = getattr(answer, "trace", None) or []
    if any(len(str(t.action_output)) > max_chars or len(str(t.action_argument)) > max_chars for t in trace):
        answer.trace = [t.model_copy(update={"action_output": _cut(t.action_output if isinstance(t.action_output, str)
                                                                    else str(t.action_output), max_chars)
                                             if len(str(t.action_output)) > max_chars else t.action_output,
                                             "action_argument": _cut(str(t.action_argument), max_chars)
                                             if len(str(t.action_argument)) > max_chars else t.action_argument})
                        for t in trace]
        cut.append("trace text")
    details = getattr(answer, "details", None)
    if isinstance(details, dict) and len(str(details)) > max_chars:
        answer.details = {"cut": "the system's details were larger than the limit and were left out"}
        cut.append("details")
    if cut and isinstance(getattr(answer, "details", None), dict):
        answer.details["cut"] = f"cut to the answer limit ({max_chars:,} characters, {max_items} items): {', '.join(cut)}"
    return answer


def decide(score: float | None, threshold: float, kind: ScoreKind = "probability") -> Consistency | None:
    """The verdict of a score (None without a score)."""
    if score is None:
        return None
    return "inconsistent" if flags(score, threshold, kind) else "consistent"


# -- passages ------------------------------------------------------------------------------------
ELEMENT_ID = re.compile(
    r"^(?P<page>.+?)_(?P<kind>header_cell|cell|table_caption|sentence|item|section|title)(?:_(?P<pos>\d+(?:_\d+)*))?$"
)
"""A FEVEROUS-style element id: ``Page_sentence_3``, ``Page_cell_0_1_2``, ``Page_header_cell_0_0_1``,
``Page_table_caption_0``, ``Page_item_1_4``."""


ReferenceKind = Literal["web", "news", "book", "journal", "other"]
"""What a cited work is, as Wikipedia's citation templates name it ({{cite web}}, {{cite news}}, ...)."""


_URL_SAFE = ":/?#@!$&()*+,;=%-._"
"""What a cited URL keeps as it is; everything else (spaces, quotes, brackets, braces, pipes, tildes,
apostrophes, non-ASCII) is percent-encoded, so a URL can never act as wiki markup where it is written."""


def safe_url(url: str | None) -> str | None:
    """A cited URL as CLAIRE keeps it: an http(s) URL with a host, whitespace and control characters
    refused, every character that could act as markup percent-encoded; None for anything else."""
    if not url or not url.strip():
        return None
    url = url.strip()
    if any(ord(c) < 32 or ord(c) == 127 or c.isspace() for c in url):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return quote(url, safe=_URL_SAFE).replace("~", "%7E")  # quote keeps "~"; four of them sign a talk page


class Reference(BaseModel):
    """A source that a passage cites (a Wikipedia ``<ref>``): where it is (``url``, absent for most
    books), what it is called, who published it (``site``: the website, newspaper, publisher or
    journal), when (``date`` as written, ISO when it could be read) and what kind of work it is."""

    model_config = ConfigDict(frozen=True)

    url: str | None = None
    title: str = ""
    site: str = ""
    date: str | None = None
    kind: ReferenceKind = "web"

    @field_validator("url", mode="before")
    @classmethod
    def _web_url(cls, value: Any) -> Any:
        return safe_url(value) if isinstance(value, str) else value

    @field_validator("date", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("title", "site", mode="before")
    @classmethod
    def _none_is_blank(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        return value if value in ("web", "news", "book", "journal") else "other"

    def key(self) -> str:
        """What makes two references the same work: the URL, else title and site."""
        return (self.url or f"{self.title}|{self.site}").strip().lower()


class BlockElement(BaseModel):
    """A citable piece of a block (a sentence, table cell, caption or list item) with its
    FEVEROUS-style id, e.g. ``Page_sentence_3`` or ``Page_cell_0_1_2``, and the references that
    back it when the source had them."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    citations: list[Reference] | None = Field(None, exclude_if=lambda value: value is None)  # left out when unknown


class _Element(Protocol):
    id: str
    text: str


def element_kind(element_id: str) -> str | None:
    """``sentence``, ``cell``, ``header_cell``, ``table_caption``, ``item`` ... of an element id."""
    match = ELEMENT_ID.match(element_id)
    return match.group("kind") if match else None


def element_rows(elements: Iterable[_Element] | None) -> list[list[_Element]]:
    """Elements grouped into display lines: consecutive cells of one table row share a line,
    every other element has a line of its own."""
    rows: list[list[_Element]] = []
    last_row: tuple[str, str] | None = None
    for element in elements or []:
        match = ELEMENT_ID.match(element.id)
        row = None
        if match and match.group("kind") in ("cell", "header_cell") and match.group("pos"):
            table, number, *_ = match.group("pos").split("_") + [""]
            row = (f"{match.group('page')}/{table}", number)
        if row is not None and row == last_row:
            rows[-1].append(element)
        else:
            rows.append([element])
        last_row = row
    return rows


def known_elements(documents: Iterable[Any]) -> list[str]:
    """Every element id of the passages (anything with ``elements``), in order, once."""
    return list(dict.fromkeys(element.id for document in documents for element in (document.elements or [])))


class Passage(BaseModel):
    """A passage of a Wikipedia article: where it stands (title, section, URL), its text, and —
    when it comes from an index — the block it is (id, type, citable elements, the article's
    categories, the page and revision it was taken from). Prompt templates read these fields
    directly."""

    model_config = ConfigDict(frozen=True)

    document_title: str = ""
    section_title: str = ""
    content: str = ""
    url: str | None = None
    last_edit_date: str | None = None
    id: str | None = None  # a corpus block's id (None for a passage that is no block, e.g. a claim's context)
    block_type: BlockType = "text"
    elements: list[BlockElement] | None = None  # citable elements, in reading order, when the source has them
    categories: list[str] | None = None  # the article's categories, when the source has them (rate breakdowns)
    page_id: int | None = None  # the wiki's page id (dump builds)
    revision_id: int | None = Field(None, exclude_if=lambda value: value is None)  # the revision it was taken from (dump builds)
    citations: list[Reference] | None = Field(None, exclude_if=lambda value: value is None)  # the sources it cites (None: unknown, left out of its data)
    language: str | None = Field(None, exclude_if=lambda value: value is None)  # its edition's language code (None: the index's one language)
    counterparts: dict[str, str] | None = Field(None, exclude_if=lambda value: value is None)  # its article's titles in other editions, by language (interlanguage links)

    @field_validator("section_title", mode="before")
    @classmethod
    def _section_or_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> "Passage":
        """A frozen passage is its own copy (LangGraph deep-copies every tool's state update)."""
        return self

    @property
    def rows(self) -> list[list[BlockElement]]:
        """The elements laid out in lines for a prompt (a table row's cells share a line)."""
        return element_rows(self.elements)  # type: ignore[return-value]

    def embed_text(self) -> str:
        """The text that is embedded and BM25-indexed: ``title > section`` then the content."""
        heading = f"{self.document_title} > {self.section_title}" if self.section_title else self.document_title
        return f"{heading}\n{self.content}"


class Block(Passage):
    """A passage of the corpus as stored in a JSONL line and an index payload: its id, title and
    content are required and not blank."""

    id: str
    document_title: str
    content: str

    @field_validator("id", "document_title", "content")
    @classmethod
    def _required(cls, value: str) -> str:
        return not_blank(value)


class Evidence(Passage):
    """A retrieved block numbered [n] in the order a system first saw it, so answers can cite it,
    with its search score."""

    n: int
    id: str = Field(validation_alias=AliasChoices("id", "block_id"))
    score: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def block_id(self) -> str:
        """The id of the block this evidence is (the name traces and predictions use)."""
        return self.id

    @classmethod
    def from_hit(cls, hit: Any, n: int) -> "Evidence":
        """The evidence [n] for one search hit (anything with ``block`` and ``score``)."""
        fields = hit.block.model_dump(exclude={"block_type", "categories", "page_id", "counterparts"})
        return cls(**fields, n=n, score=hit.score)

    def trace_view(self) -> dict[str, object]:
        """How a passage appears in a trace (WikiCollide's ``agent_trace`` passages plus our number and id)."""
        view: dict[str, object] = {"n": self.n, "block_id": self.id, "document_title": self.document_title,
                                   "section_title": self.section_title, "content": self.content, "url": self.url}
        if self.language is not None:  # a passage of another edition (checking across languages)
            view["language"] = self.language
        return view


def titled_passage(passage: Passage) -> Passage:
    """``passage`` when its title and content are not blank (a dataset's context passage must
    name its article and hold text), else a ValueError saying which is blank."""
    for name in ("document_title", "content"):
        if not getattr(passage, name).strip():
            raise ValueError(f"{name} must not be empty")
    return passage


# -- claims and answers --------------------------------------------------------------------------
class Claim(BaseModel):
    """One fact to check, with the passage it comes from (its own article is excluded from search)."""

    claim_id: str = "claim"
    text: str
    context: Passage = Field(default_factory=Passage)
    label: Consistency | None = None  # gold label, when known (evaluation)
    inconsistency_type: str | None = None
    gold: dict[str, Any] | None = None  # a task's gold answer, e.g. FEVEROUS {label, evidence}


class TraceItem(BaseModel):
    """One step of a system's work: the action, its argument and what it produced."""

    action_name: str
    action_argument: Any = None
    action_output: Any = None
    thought: str | None = Field(None, exclude_if=lambda value: value is None)  # what the controller thought before it (ReAct)


class Assessment(BaseModel):
    """A system's answer for one claim: score and verdict (or a FEVEROUS label), the evidence, the
    research trace, usage and latency, and the error when it could not be answered."""

    claim_id: str
    system: str
    claim_text: str
    score: float | None = None  # an inconsistency score in [0, 1], or a count (score_kind)
    score_kind: ScoreKind = "probability"
    probability: float | None = None  # the score calibrated into a probability (when agent.calibration is set)
    verdict: Consistency | None = None
    threshold: float
    evidence: list[Evidence] = Field(default_factory=list)
    clarifications: list[dict[str, str]] = Field(default_factory=list)
    explanations: list[dict[str, str]] = Field(default_factory=list)
    reported: list[str] = Field(default_factory=list)
    restated_claim: str | None = None
    reasoning: str | None = None
    report: dict[str, str] | None = None  # {"consistent": ..., "inconsistent": ...}
    details: dict[str, Any] = Field(default_factory=dict)
    trace: list[TraceItem] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None
    # task "feverous": the three-way label and the cited evidence element ids
    label: str | None = None
    evidence_elements: list[str] = Field(default_factory=list)

    def decide(self) -> None:
        """Set the verdict from the score, its kind and the threshold (no verdict without a score)."""
        self.verdict = decide(self.score, self.threshold, self.score_kind)
