"""The FEVEROUS dataset: its published JSONL read into validated records and CLAIRE claims.

Each line of a published file (train/dev/test) is one claim::

    {"id": 24435, "claim": "...", "label": "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO",
     "evidence": [{"content": ["Page_sentence_0", "Page_cell_0_1_2", ...], "context": {...}}, ...],
     "challenge": "Numerical Reasoning", "annotator_operations": [...], ...}

``evidence`` holds up to three alternative evidence sets; only their ``content`` ids count for
scoring. The published files start with an empty header record, which is skipped. A malformed line
raises :class:`claire.errors.DatasetError` naming FILE:LINE and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from claire.domain import Claim
from claire.errors import DatasetError
from claire.files import read_jsonl
from claire.validation import NonBlank, RecordId, quoted, validated_record

FeverousLabel = Literal["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
FEVEROUS_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


class FeverousRecord(BaseModel):
    """One FEVEROUS claim: its gold label and its evidence sets as lists of ``content`` ids."""

    id: RecordId
    claim: NonBlank
    label: FeverousLabel
    evidence: list[list[str]]
    challenge: str | None = None

    @field_validator("evidence", mode="before")
    @classmethod
    def _content_ids(cls, value: Any) -> Any:
        """Published sets are objects ``{content, context}``; plain lists of ids are read too."""
        if not isinstance(value, list):
            return value
        sets = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                if "content" not in item:
                    raise ValueError(f"set {index} has no 'content' list")
                item = item["content"]
            sets.append(item)
        return sets

    @field_validator("evidence")
    @classmethod
    def _sets_not_empty(cls, value: list[list[str]]) -> list[list[str]]:
        # An empty set occurs in published NOT ENOUGH INFO records; it is kept. Like every set it
        # counts as complete when all its ids are predicted — for an empty set that is always, as
        # in FEVEROUS's official scorer — so such a claim is scored on its label. Empty ids are errors.
        for index, ids in enumerate(value):
            if any(not element.strip() for element in ids):
                raise ValueError(f"set {index} holds an empty id")
        return value

    def to_claim(self) -> Claim:
        """The claim as CLAIRE systems take it (no context article: FEVEROUS claims stand alone)."""
        return Claim(claim_id=self.id, text=self.claim,
                     gold={"label": self.label, "evidence": self.evidence, "challenge": self.challenge})


def _is_header(record: Any) -> bool:
    return isinstance(record, dict) and not record.get("claim") and not record.get("label")


def load_feverous(path: str | Path) -> list[FeverousRecord]:
    """Every record of a FEVEROUS JSONL file, validated; the leading empty header record skipped."""
    path = Path(path)
    records: list[FeverousRecord] = []
    first_line: dict[str, int] = {}
    seen_any = False
    for line in read_jsonl(path, what="FEVEROUS", hint="a FEVEROUS JSONL file"):
        number = line.number
        where = f"{path}:{number}"
        if not line.ok:
            raise DatasetError(f"{where}: {line.problem}; expected one FEVEROUS record a line")
        raw = line.value
        if not seen_any and _is_header(raw):
            seen_any = True
            continue
        seen_any = True
        record = validated_record(FeverousRecord, raw, where, problem=quoted)
        if record.id in first_line:
            raise DatasetError(f"{where}: field 'id' repeats '{record.id}' (first on line {first_line[record.id]})")
        first_line[record.id] = number
        records.append(record)
    if not records:
        raise DatasetError(f"{path}: no FEVEROUS records")
    return records


def load_feverous_claims(path: str | Path) -> list[Claim]:
    """The claims of a FEVEROUS file with their gold label and evidence sets in ``Claim.gold``."""
    return [record.to_claim() for record in load_feverous(path)]
