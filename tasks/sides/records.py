"""The sides task's records: a contradiction with each side's statement, passage and citations
(:class:`SidesCase`), read from JSONL files, and what the resolver answers for one
(:class:`Resolution`, each side a :class:`SideReport` with its sources judged as
:class:`SourceJudgement` s).

A case line: ``{id, fact, passage, others?, sources?, time_varying?, label?}`` — or, for a case
given as a flagged check, ``{id, flag: {fact, evidence: [{n, document_title, section_title, content,
citations, block_id?}], analysis?, reported?}, sources?, label?}`` — where ``fact`` and
``passage`` are ``{text, document_title, section_title?, content?, citations: [{url, title, site,
date, kind}], url?, revision_id?}``, ``others`` are other passages ``[{document_title, content,
citations}]``, ``sources`` the cited pages' text ``[{url, title, site, date, text}]`` (so no fetch is
needed) and ``label`` one of ``fact``, ``passage``, ``both``, ``unknown``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, computed_field, field_validator

from claire.domain import Reference
from claire.errors import DatasetError
from claire.files import read_jsonl
from claire.sources.reliability import Tier

Decision = Literal["fact", "passage", "both", "unknown"]
"""Which side is right: the fact, the passage, both can stand, or cannot tell."""
DECISIONS: tuple[Decision, ...] = ("fact", "passage", "both", "unknown")
DECISION_WORDS: dict[str, str] = {"fact": "the fact is right", "passage": "the passage is right",
                                  "both": "both can stand", "unknown": "cannot tell"}
"""How the terminal, the web card and the talk page say each decision."""


class Support(StrEnum):
    """Where a cited source stands on its side's value."""

    STATES = "states"
    SILENT = "silent"
    CONTRADICTS = "contradicts"
    UNKNOWN = "unknown"  # not checked: the citation has no URL
    UNREADABLE = "could not read"


SUPPORT_WORDS: dict[Support, str] = {
    Support.STATES: "states it", Support.CONTRADICTS: "gives the other value", Support.SILENT: "does not state it",
    Support.UNREADABLE: "could not be read", Support.UNKNOWN: "not checked (no URL)",
}
"""How the terminal and the web card say where a source stands (one table: the card's JSON carries
each source's words as ``support_words``)."""
ValuesFrom = Literal["given", "model", "word overlap", "infobox"]
"""Where a resolve's two values came from: given with the case, named by the model from the
research's own answer, or, when the model named none, the words that set the two statements apart."""


class Side(BaseModel):
    """One side of a contradiction: its statement and the passage and article it stands in."""

    text: str
    document_title: str = ""
    section_title: str = ""
    content: str = ""
    citations: list[Reference] = Field(default_factory=list)
    url: str | None = None
    revision_id: int | None = None
    block_id: str | None = None  # the corpus block it stands in, when known (a worklist's entries pair blocks)
    sentence: str | None = None  # the article's own sentence that states it, when known (the talk page quotes it)
    language: str | None = Field(None, exclude_if=lambda value: value is None)  # its edition (None: the index's own)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the statement is empty")
        return value.strip()

    @field_validator("citations", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class OtherPassage(BaseModel):
    """Another passage of the corpus that may give one side's value."""

    document_title: str = ""
    content: str
    citations: list[Reference] = Field(default_factory=list)

    @field_validator("citations", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class GivenSource(BaseModel):
    """A cited page's text given with the case (read instead of fetched), and — for the
    evaluation — what the case's author found it to say of the value of the side citing it."""

    url: str
    title: str = ""
    site: str = ""
    date: str | None = None
    text: str
    expect: Literal["states", "silent", "contradicts"] | None = None


class SidesCase(BaseModel):
    """A contradiction to resolve: the fact, the passage that contradicts it, other passages (None:
    search the index for them), the cited pages' text (when given, the only pages read: a citation
    whose page is not among them cannot be read), whether the fact changes over time (None: let the
    model say) and the gold decision when known."""

    claim_id: str = Field("case", alias="id")
    fact: Side
    passage: Side
    others: list[OtherPassage] | None = None
    read: list[OtherPassage] = Field(default_factory=list)  # a check's research passages (with others None)
    sources: list[GivenSource] = Field(default_factory=list)
    time_varying: bool | None = None
    label: Decision | None = None
    values: tuple[str, str] | None = None  # what the fact and the passage each state on the point in conflict
    values_from: ValuesFrom | None = None  # who named them (None: the resolver works them out)

    model_config = {"populate_by_name": True}

    @property
    def text(self) -> str:
        """The fact's statement (what a run's progress and lines name)."""
        return self.fact.text


class ReadPassage(BaseModel):
    """A passage a flagged check's research read, numbered as its answer cited it."""

    n: int
    document_title: str
    section_title: str = ""
    content: str
    citations: list[Reference] = Field(default_factory=list)
    block_id: str | None = None

    @field_validator("citations", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class Flag(BaseModel):
    """What a flagged check found: the fact (its statement, article, paragraph and citations), the
    passages its research read and its verdict's analysis and reported contradictions. Which passage
    conflicts, and what each side states, are left for the resolver to find."""

    fact: Side
    evidence: list[ReadPassage] = Field(min_length=1)
    analysis: str = ""
    reported: list[str] = Field(default_factory=list)


class FlagCase(BaseModel):
    """A case given as a flagged check (``flag``), so the evaluation measures the step real use
    goes through: naming the conflict from the research's answer, then resolving it."""

    claim_id: str = Field("case", alias="id")
    flag: Flag
    sources: list[GivenSource] = Field(default_factory=list)
    time_varying: bool | None = None
    label: Decision | None = None

    model_config = {"populate_by_name": True}

    @property
    def fact(self) -> Side:
        """The flagged fact."""
        return self.flag.fact

    @property
    def text(self) -> str:
        """The fact's statement."""
        return self.flag.fact.text


class SourceJudgement(BaseModel):
    """One cited source of a side, read and rated: its tier on the Perennial sources list, whether
    it states the side's value (with the sentence, word for word), and why it could not be read."""

    reference: Reference
    tier: Tier = Tier.NOT_LISTED
    tier_detail: str = "not listed"
    support: Support = Support.UNKNOWN
    quote: str | None = None
    score: float | None = None
    date: str | None = None  # the source's publication date (the citation's, else the page's)
    note: str | None = None  # why it could not be read, or why support is unknown

    @computed_field  # type: ignore[prop-decorator]
    @property
    def support_words(self) -> str:
        """Where the source stands, in the words the terminal and the web card show."""
        return SUPPORT_WORDS[self.support]


class SideReport(BaseModel):
    """One side as the card shows it."""

    side: Literal["fact", "passage"]
    text: str
    value: str = ""
    document_title: str = ""
    section_title: str = ""
    link: str | None = None  # the article (a permanent revision link when the revision is known)
    block_id: str | None = None  # the corpus block the statement stands in, when known
    sentence: str | None = None  # the article's own sentence, when known (the statement may be a fact extracted from it)
    language: str | None = Field(None, exclude_if=lambda value: value is None)  # its edition, when it differs from the other side's
    translation: str | None = Field(None, exclude_if=lambda value: value is None)  # its sentence in the other side's language, by the model
    translated_into: str | None = Field(None, exclude_if=lambda value: value is None)  # that language's code
    sources: list[SourceJudgement] = Field(default_factory=list)
    agreeing: list[str] = Field(default_factory=list)  # distinct other sources that give its value
    strength: float = 0.0
    verified: bool = False  # a source of at least some standing was read and states its value


class Resolution(BaseModel):
    """Which side is right, with the reasons and the talk-page draft."""

    claim_id: str
    decision: Decision | None = None
    confidence: float | None = None
    reasons: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    explanation: str | None = None
    both_reason: str | None = None
    time_varying: bool | None = None
    values_from: ValuesFrom | None = None  # where the two values compared came from (the card says so)
    sides: list[SideReport] = Field(default_factory=list)
    talk_page: str | None = None
    talk_page_article: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float | None = None
    error: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decision_words(self) -> str | None:
        """The decision in the words the terminal, the web card and the worklist show."""
        return DECISION_WORDS[self.decision] if self.decision else None

    def side(self, name: str) -> SideReport | None:
        """The report of side ``fact`` or ``passage``."""
        return next((s for s in self.sides if s.side == name), None)


def load_cases(path: str | Path) -> list[SidesCase | FlagCase]:
    """The cases of a sides JSONL file; a bad line is a DatasetError naming FILE:LINE and the problem."""
    path = Path(path)
    cases: list[SidesCase] = []
    seen: dict[str, int] = {}
    for line in read_jsonl(path, what="sides cases", hint="a JSONL file with one case (id, fact, passage, ...) a line"):
        if line.problem is not None:
            raise DatasetError(f"{path}:{line.number}: {line.problem}")
        if not isinstance(line.value, dict):
            raise DatasetError(f"{path}:{line.number}: expected a JSON object")
        try:
            shape = FlagCase if "flag" in line.value else SidesCase
            case = shape.model_validate({"id": str(line.number), **({} if "flag" in line.value else {"others": []}),
                                         **line.value})
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the line"
            raise DatasetError(f"{path}:{line.number}: {where}: {first['msg']}") from None
        if case.claim_id in seen:
            raise DatasetError(f"{path}:{line.number}: id '{case.claim_id}' also appears on line {seen[case.claim_id]}")
        seen[case.claim_id] = line.number
        cases.append(case)
    if not cases:
        raise DatasetError(f"{path} holds no cases")
    return cases
