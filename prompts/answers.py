"""The shape of each answer with a fixed form, declared beside its template as a pydantic model.

With ``llm.structured = "auto"`` a template renders its answer format as a JSON object (its
``_json_answer.j2`` section, from the model's fields) and the request carries the model's JSON
schema, which OpenAI, vLLM, llama.cpp's server and Ollama turn into constrained decoding. An answer
that validates is read as its typed model (:func:`claire.llm.client.parsed_of`, ``Asked.parsed``),
never through its text; one that does not validate is asked again with the validation error, and
never becomes a score; a tagged answer (the model ignored the schema) is read from its tags. ``"off"`` (the paper preset) keeps the tagged text the paper's
prompts ask for.

A template without a model here (the controller, whose actions are tool calls; explain,
clarify_entity and the two-sided report, which are prose) is asked as before. A leaf module.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Label = Literal["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


class Answer(BaseModel):
    """An answer of fixed shape: its fields are what the template's JSON answer holds."""

    model_config = ConfigDict(extra="ignore")
    schema_name: ClassVar[str] = "answer"

    @classmethod
    def fields_for_prompt(cls) -> list[dict[str, str]]:
        """The keys of the JSON object, in order, each with what it holds (the template's answer format)."""
        return [{"name": name, "description": field.description or ""} for name, field in cls.model_fields.items()]

    @classmethod
    def response_format(cls) -> dict[str, Any]:
        """The OpenAI Chat Completions ``response_format`` that asks for this shape."""
        return {"type": "json_schema", "json_schema": {"name": cls.schema_name, "schema": cls.model_json_schema(),
                                                       "strict": False}}


class VerifierAnswer(Answer):
    schema_name: ClassVar[str] = "verifier_answer"
    restated_claim: str = Field(description="the fact as a self-contained sentence with its article's context (corrected if needed)")
    analysis: str = Field(description="your analysis, citing documents as [n]")
    inconsistency_score: float = Field(ge=0.0, le=1.0, description="a single number from 0 to 1")


class FeverousVerdictAnswer(Answer):
    schema_name: ClassVar[str] = "feverous_verdict"
    analysis: str = Field(description="your reasoning, citing passages as [n]")
    label: Label = Field(description='"SUPPORTS", "REFUTES" or "NOT ENOUGH INFO"')
    evidence: list[str] = Field(description="the ids of the elements you rely on, copied exactly")


class NLIAnswer(Answer):
    schema_name: ClassVar[str] = "nli_answer"
    label: Label = Field(description='"SUPPORTS", "REFUTES" or "NOT ENOUGH INFO"')
    reason: str = Field(description="one sentence")


class FeverousNLIAnswer(Answer):
    schema_name: ClassVar[str] = "feverous_nli_answer"
    label: Label = Field(description='"SUPPORTS", "REFUTES" or "NOT ENOUGH INFO"')
    evidence: list[str] = Field(description="the ids of the elements that decide it, copied exactly")
    reason: str = Field(description="one sentence")


class RankingAnswer(Answer):
    schema_name: ClassVar[str] = "ranking"
    order: list[int] = Field(description="the passage numbers, most relevant first, each once")


class ExtractedFact(BaseModel):
    fact: str = Field(description="one atomic, self-contained fact")
    source: str = Field(description="the sentence of the text it comes from, copied word for word")


class ExtractionAnswer(Answer):
    schema_name: ClassVar[str] = "facts"
    reasoning: str = Field("", description="your reasoning before the list (may be empty)")
    facts: list[ExtractedFact] = Field(description='the facts, each an object {"fact": ..., "source": ...}')


class CitationSupportAnswer(Answer):
    schema_name: ClassVar[str] = "citation_support"
    analysis: str = Field(description="your reasoning")
    best_passage: int | None = Field(None, description="the number of the passage that best supports the claim, or null")
    supporting_sentence: str = Field("none", description="the supporting sentence, copied from the source, or none")
    stance: Literal["states", "silent", "contradicts"] = Field(description='"states", "silent" or "contradicts"')
    support_score: float = Field(ge=0.0, le=1.0, description="a number from 0 to 1: 0 no support at all, 1 the claim in full")


class QueriesAnswer(Answer):
    schema_name: ClassVar[str] = "queries"
    queries: list[str] = Field(description="the search queries, each a few words")


class ResolveAnswer(Answer):
    schema_name: ClassVar[str] = "resolution"
    changes_over_time: Literal["yes", "no"] = Field(description='"yes" or "no"')
    both_can_stand: Literal["yes", "no"] = Field(description='"yes" or "no"')
    reason: str = Field(description="one sentence: why both can or cannot stand")
    explanation: str = Field(description="two to four sentences on the evidence")


class ConflictAnswer(Answer):
    schema_name: ClassVar[str] = "conflict"
    conflicting_document: int | None = Field(None, description="the number of the document in clearest conflict with the fact, or null")
    fact_value: str = Field("", description="what the fact says on that point, in a few words (empty when none)")
    document_value: str = Field("", description="what the document says instead, in a few words (empty when none)")


class TranslationAnswer(Answer):
    schema_name: ClassVar[str] = "translation"
    translation: str = Field(description="the sentence translated, every number, date, unit and name kept")


class StatementAnswer(Answer):
    schema_name: ClassVar[str] = "statement"
    statement: str = Field(description="one declarative sentence")


ANSWERS: dict[str, type[Answer]] = {
    "verifier": VerifierAnswer, "verifier.feverous": FeverousVerdictAnswer,
    "nli": NLIAnswer, "nli.feverous": FeverousNLIAnswer,
    "rankgpt": RankingAnswer, "fact_extraction": ExtractionAnswer,
    "cite_support": CitationSupportAnswer, "cite_queries": QueriesAnswer,
    "resolve_explain": ResolveAnswer, "qa_to_statement": StatementAnswer, "conflict": ConflictAnswer,
    "translate": TranslationAnswer,
}
"""Each template's answer shape, by template name (a variant's own entry wins over its template's)."""


def answer_for(template: str, variant: str | None = None) -> type[Answer] | None:
    """The answer shape of a template, or of its variant when that one asks for another (None: prose)."""
    return ANSWERS.get(f"{template}.{variant}") or ANSWERS.get(template)


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def read_json_answer(text: str, shape: type[Answer]) -> tuple[Answer | None, str | None]:
    """The answer read from a JSON object in ``text`` (the whole text, or the outermost braces in it,
    as a model that wraps it in a code fence writes it): ``(answer, None)``; ``(None, error)`` when
    there is an object that does not fit the shape; ``(None, None)`` when there is no JSON at all."""
    found = _OBJECT.search(text or "")
    if found is None:
        return None, None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    try:
        return shape.model_validate(data), None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(part) for part in item['loc']) or 'answer'}: {item['msg']}"
                             for item in error.errors()[:5])
        return None, problems
