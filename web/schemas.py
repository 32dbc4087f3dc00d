"""The request and response bodies of the web API, as pydantic models (they are also what
``/openapi.json`` and ``/docs`` describe). The search endpoint's body is the search-endpoint
contract of ``indexes.http_search``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, Field

MAX_TEXT = 200_000  # characters of an article; a long Wikipedia article is ~100k

def _checking_system(value: str | None) -> str | None:
    """A system that checks facts, named as the registry names it (None: the server's configured one)."""
    from claire.agent.registry import systems_answering

    if value is not None and value not in systems_answering("wikicollide"):
        raise ValueError(f"unknown system {value!r}; allowed: {', '.join(systems_answering('wikicollide'))}")
    return value


SystemName = Annotated[str, AfterValidator(_checking_system)]
"""A built-in system that checks facts (a system of your own is the server's ``agent.system``)."""
ScanView = Literal["full", "summary", "trace"]


def _language_code(value: str | None) -> str | None:
    from claire.languages import checked_code

    return checked_code(value) if value else None


Edition = Annotated[str | None, AfterValidator(_language_code)]
"""An edition's language code (``de``), checked; None for the server's own edition."""


class CheckRequest(BaseModel):
    """One fact to check, with where it was read."""

    fact: str = Field(min_length=1, max_length=100_000)  # agent.max_fact_chars decides, with the scan hint
    title: str | None = Field(None, max_length=300)
    section: str | None = Field(None, max_length=300)
    context: str | None = Field(None, max_length=20_000)
    system: SystemName | None = None
    language: Edition = Field(None, max_length=20, description="the fact's edition (a language code, e.g. de); "
                              "unset: the server's retrieval.language")


class ScanRequest(BaseModel):
    """An article or passage whose facts are extracted and checked."""

    title: str = Field(min_length=1, max_length=300)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    section: str | None = Field(None, max_length=300)
    system: SystemName | None = None
    max_facts: int | None = Field(None, ge=1, le=1000)
    language: Edition = Field(None, max_length=20, description="the edition the text is from (a language code, "
                              "e.g. de); unset: the server's retrieval.language")


class ReviewRequest(BaseModel):
    """An editor's decision on one checked fact of a scan or check."""

    job_id: str = Field(validation_alias=AliasChoices("job_id", "scan_id", "check_id", "id"), max_length=64)
    fact: str = Field(min_length=1, max_length=2000, description="the fact's text, its claim id or its index")
    decision: Literal["accept", "reject"]
    comment: str | None = Field(None, max_length=4000)


class ResolveRequest(BaseModel):
    """Which side is right: a flagged fact of a job (its id and the fact's text, claim id or index),
    or a whole case in the sides task's shape (``{fact, passage, others?, sources?, time_varying?}``)."""

    job_id: str | None = Field(None, validation_alias=AliasChoices("job_id", "scan_id", "check_id", "id"), max_length=64)
    fact: str | None = Field(None, min_length=1, max_length=2000)
    case: dict | None = None


class Created(BaseModel):
    """The id of a job just accepted for the background."""

    id: str


class Rechecked(BaseModel):
    """A finished job queued again: its id and how many of its failed facts are checked again."""

    id: str
    requeued: int


class Health(BaseModel):
    """What the server runs: its version, system, index and threshold (a score above it is flagged;
    for nli a REFUTES count from it on), whether scores are calibrated, its concurrency, and whether
    it asks for a token."""

    status: Literal["ok"] = "ok"
    version: str
    system: str
    index: str
    threshold: float | None
    calibrated: bool
    concurrency: int
    token_required: bool


class ArticleTitles(BaseModel):
    """Article titles of the index that match a query, best first."""

    titles: list[str]


class ArticleText(BaseModel):
    """An article of the index as one text, its sections under their headings."""

    title: str
    text: str
    blocks: int


class Review(BaseModel):
    """An editor's decision on a checked fact."""

    job_id: str
    claim_id: str
    fact: str
    decision: str
    comment: str | None = None
    created: float


class Reviews(BaseModel):
    """Reviews, oldest first."""

    reviews: list[Review]


class Patrol(BaseModel):
    """Facts from new edits, newest edit first, and the patrol's counts."""

    items: list[dict[str, Any]]  # each a checked fact with its edit, score, verdict, evidence, diff link and review
    watching: bool  # whether this server runs a patrol now
    stopped: str | None  # why the patrol this server ran ended
    edits: dict[str, int]  # patrolled edits by status
    stats: dict[str, Any] | None  # the running patrol's counts


class CheckAnswer(BaseModel):
    """A check: its status, its steps so far and, when done, its Assessment (as ``claire check
    --json`` prints it) and review."""

    id: str
    status: str
    error: str | None
    reason: str | None  # the failure's kind, when it failed
    request: dict[str, Any]
    steps: list[dict[str, Any]]
    assessment: dict[str, Any] | None
    cited: list[int]  # the evidence numbers the reasoning cites
    review: dict[str, Any] | None


class ScanProgress(BaseModel):
    """How far a scan has come."""

    total: int
    done: int
    errors: int
    checked: int
    flagged: int


class ScanAnswer(BaseModel):
    """A scan: its status, progress and every fact with its span in the text, score, verdict,
    assessment and review (rendered once per change and served as it was rendered)."""

    id: str
    status: str
    error: str | None
    reason: str | None
    title: str
    text: str
    system: str
    progress: ScanProgress
    facts: list[dict[str, Any]]


class RecentScan(BaseModel):
    """One of the latest scans, with how many of its facts were checked and flagged."""

    id: str
    title: str | None
    status: str
    error: str | None
    created: float
    facts: int
    checked: int
    errors: int
    flagged: int
