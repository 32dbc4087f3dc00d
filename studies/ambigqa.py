"""The AmbigQA dataset (open-domain questions with every plausible answer).

The published files are a JSON array of records::

    {"id": "-4469503464110108318", "question": "When did the simpsons first air on television?",
     "annotations": [{"type": "singleAnswer", "answer": ["December 17, 1989"]},
                     {"type": "multipleQAs", "qaPairs": [{"question": "...", "answer": ["...", ...]}, ...]}]}

An audit takes each record's first annotation: a ``singleAnswer`` gives one question-answer
pair, a ``multipleQAs`` one pair per disambiguated question (:func:`qa_pairs`); the first answer
string is the gold answer, the others are its accepted variants. A malformed record raises
:class:`claire.errors.DatasetError` naming the file, the record and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, field_validator

from claire.errors import DatasetError
from claire.files import json_records
from claire.validation import NonBlank, RecordId, quoted, validated_record


def _answers(value: list[str]) -> list[str]:
    cleaned = [" ".join(a.split()) for a in value if isinstance(a, str) and a.strip()]
    if not cleaned:
        raise ValueError("needs at least one non-empty answer")
    return cleaned


class QAPair(BaseModel):
    """One question with its answers."""
    question: str
    answer: list[str]

    _check_answer = field_validator("answer")(_answers)


class SingleAnswer(BaseModel):
    """An annotation with a single answer."""
    type: Literal["singleAnswer"]
    answer: list[str]

    _check_answer = field_validator("answer")(_answers)


class MultipleQAs(BaseModel):
    """An annotation that splits the question into several question-answer pairs."""
    type: Literal["multipleQAs"]
    qaPairs: list[QAPair] = Field(min_length=1)


Annotation = Annotated[Union[SingleAnswer, MultipleQAs], Field(discriminator="type")]


class AmbigQARecord(BaseModel):
    """One AmbigQA record as published."""
    id: RecordId
    question: NonBlank
    annotations: list[Annotation] = Field(min_length=1)


class QAItem(BaseModel):
    """One question with its gold answer, as an audit checks it."""

    item_id: str
    record_id: str
    question: str
    answer: str
    variants: list[str] = Field(default_factory=list)


def qa_pairs(record: AmbigQARecord) -> list[QAItem]:
    """The question-answer pairs of a record's first annotation."""
    annotation = record.annotations[0]
    if isinstance(annotation, SingleAnswer):
        return [QAItem(item_id=record.id, record_id=record.id, question=record.question,
                       answer=annotation.answer[0], variants=annotation.answer[1:])]
    return [QAItem(item_id=f"{record.id}#{n}", record_id=record.id, question=pair.question,
                   answer=pair.answer[0], variants=pair.answer[1:])
            for n, pair in enumerate(annotation.qaPairs)]


def load_ambigqa(path: str | Path) -> list[AmbigQARecord]:
    """Every record of an AmbigQA file (its published JSON array, or JSONL), read as every data file
    is (:func:`claire.files.json_records`: a regular file, within the size limit); the whole file or
    an error naming the record."""
    path = Path(path)
    entries = json_records(path, what="AmbigQA", hint="an AmbigQA file: a JSON array of records, or one record a line")
    records: list[AmbigQARecord] = []
    seen: set[str] = set()
    for entry in entries:
        raw = entry.value
        where = f"{path}: {entry.where}" + (f" (id {raw.get('id')})" if isinstance(raw, dict) and raw.get("id") else "")
        record = validated_record(AmbigQARecord, raw, where, problem=quoted)
        if record.id in seen:
            raise DatasetError(f"{where}: duplicate id")
        seen.add(record.id)
        records.append(record)
    if not records:
        raise DatasetError(f"{path} holds no AmbigQA records")
    return records
