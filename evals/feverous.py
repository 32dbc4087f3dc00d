"""The FEVEROUS dataset (claims verified against Wikipedia sentences, tables and lists).

The published files are JSONL, one record a line::

    {"id": 24435, "claim": "...", "label": "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO",
     "evidence": [{"content": ["Page_sentence_0", "Page_cell_0_1_1", ...], "context": {...}}, ...],
     "challenge": "Numerical Reasoning", ...}

The first line of a published file is often an empty header record (``"id": ""``, ``"claim":
""``); it is skipped. Each evidence set is read as the list of its ``content`` element ids
(``"Page_sentence_0"``, ``"Page_cell_0_1_1"``, ...). A malformed line raises
:class:`claire.errors.DatasetError` naming ``FILE:LINE`` and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, field_validator

from claire.errors import DatasetError

FeverousLabel = Literal["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


class FeverousRecord(BaseModel):
    id: str
    claim: str
    label: FeverousLabel
    evidence: list[list[str]]  # each evidence set's ``content`` element ids
    challenge: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("id", "claim")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("evidence", mode="before")
    @classmethod
    def _contents(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        sets = []
        for index, item in enumerate(value):
            if isinstance(item, dict):
                if "content" not in item:
                    raise ValueError(f"evidence set {index} has no 'content' list")
                item = item["content"]
            sets.append(item)
        return sets


def _is_header(record: Any) -> bool:
    return isinstance(record, dict) and record.get("id") == "" and record.get("claim") == ""


def _describe(error: ValidationError) -> str:
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"]) or "record"
    problem = "is missing" if item["type"] == "missing" else item["msg"].removeprefix("Value error, ")
    return f"field '{where}' {problem}"


def load_feverous(path: str | Path) -> list[FeverousRecord]:
    """Every record of a FEVEROUS JSONL file (the empty header line skipped); the whole file or an error."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DatasetError(f"FEVEROUS file {path} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"cannot read FEVEROUS file {path}: {error}") from None
    records: list[FeverousRecord] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetError(f"{path}:{number}: invalid JSON ({error.msg}); FEVEROUS files have one record a line") from None
        if not isinstance(raw, dict):
            raise DatasetError(f"{path}:{number}: expected a JSON object")
        if not records and not seen and _is_header(raw):
            continue
        try:
            record = FeverousRecord.model_validate(raw)
        except ValidationError as error:
            raise DatasetError(f"{path}:{number}: {_describe(error)}") from None
        if record.id in seen:
            raise DatasetError(f"{path}:{number}: duplicate id '{record.id}' (first on line {seen[record.id]})")
        seen[record.id] = number
        records.append(record)
    if not records:
        raise DatasetError(f"{path} holds no FEVEROUS records")
    return records
