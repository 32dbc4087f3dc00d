"""The request and response bodies of the web API, as pydantic models (they are also what
``/openapi.json`` and ``/docs`` describe). The search endpoint's body is the search-endpoint
contract of ``indexes.http_search``."""

from __future__ import annotations

from typing import Annotated, Literal

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


class CheckRequest(BaseModel):
    """One fact to check, with where it was read."""

    fact: str = Field(min_length=1, max_length=100_000)  # agent.max_fact_chars decides, with the scan hint
    title: str | None = Field(None, max_length=300)
    section: str | None = Field(None, max_length=300)
    context: str | None = Field(None, max_length=20_000)
    system: SystemName | None = None


class ScanRequest(BaseModel):
    """An article or passage whose facts are extracted and checked."""

    title: str = Field(min_length=1, max_length=300)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    section: str | None = Field(None, max_length=300)
    system: SystemName | None = None
    max_facts: int | None = Field(None, ge=1, le=1000)


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
