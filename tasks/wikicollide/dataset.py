"""The WikiCollide dataset: reading its records into validated models and CLAIRE claims.

The published format is a JSON array of records::

    {"claim": {"claim_id", "claim_text", "claim_context_block": {content, document_title,
     section_title, last_edit_date, url}}, "label": "consistent" | "inconsistent",
     "label_reasoning", "inconsistency_type" (optional), "agent_trace": [{action_name,
     action_argument, action_output}]}

JSONL (one record a line) is read too. A file is read whole or not at all: the first problem
raises :class:`claire.errors.DatasetError` naming the file, the record, its claim_id and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from claire.errors import DatasetError
from claire.files import json_records
from claire.domain import Claim, Passage, TraceItem, titled_passage
from claire.validation import NonBlank, validated_record

Split = Literal["validation", "test"]
SPLITS: tuple[str, ...] = ("validation", "test")


ContextPassage = Annotated[Passage, AfterValidator(titled_passage)]
"""A record's ``claim_context_block``: a passage whose title and content must not be empty."""


class ClaimRecord(BaseModel):
    """A record's ``claim``: its id, its text and the passage it was taken from."""

    claim_id: NonBlank
    claim_text: NonBlank
    claim_context_block: ContextPassage


class WikiCollideRecord(BaseModel):
    """One record as published, validated; ``agent_trace`` is the dataset's gold research trace."""

    claim: ClaimRecord
    label: Literal["consistent", "inconsistent"]
    label_reasoning: str | None = None
    inconsistency_type: str | None = None
    agent_trace: list[TraceItem] = Field(default_factory=list)

    def to_claim(self) -> Claim:
        """The record as the Claim a system checks (gold label and type kept)."""
        context = self.claim.claim_context_block
        return Claim(
            claim_id=self.claim.claim_id,
            text=self.claim.claim_text,
            context=Passage(**context.model_dump()),
            label=self.label,
            inconsistency_type=self.inconsistency_type,
        )


def load_records(path: str | Path) -> list[WikiCollideRecord]:
    """Every record of a WikiCollide file (JSON array or JSONL), validated, gold traces kept."""
    path = Path(path)
    raw = json_records(path, what="dataset", hint="expected a JSON array of records or JSONL with one record a line")
    if not raw:
        raise DatasetError(f"{path}: no records")
    records: list[WikiCollideRecord] = []
    first_index: dict[str, str] = {}
    for number, entry in enumerate(raw):
        where = f"record {number}" + (f" (line {entry.line})" if entry.line else "")
        value = entry.value
        claim = value.get("claim") if isinstance(value, dict) else None
        claim_id = claim.get("claim_id") if isinstance(claim, dict) else None
        label = f"{where} (claim_id {claim_id})" if isinstance(claim_id, str) else where
        record = validated_record(WikiCollideRecord, value, f"{path}: {label}")
        if record.claim.claim_id in first_index:
            raise DatasetError(
                f"{path}: {label}: field claim.claim_id: duplicate of {first_index[record.claim.claim_id]}"
            )
        first_index[record.claim.claim_id] = where
        records.append(record)
    return records


def load_wikicollide(path: str | Path) -> list[Claim]:
    """The claims of a WikiCollide file, with gold labels and inconsistency types."""
    return [record.to_claim() for record in load_records(path)]


def infer_split(path: str | Path) -> Split | None:
    """"validation" for dev/val files, "test" for test files (by file name), else None."""
    words = set(re.split(r"[^a-z]+", Path(path).stem.lower()))
    if words & {"dev", "val", "valid", "validation"}:
        return "validation"
    if "test" in words:
        return "test"
    return None
