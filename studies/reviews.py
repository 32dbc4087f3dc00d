"""People's decisions on flagged facts: the ``reviews.jsonl`` file of a run directory.

One JSON object a line, appended as each decision is made::

    {"claim_id": "fact-1a2b3c4d5e", "fact": "The Eiffel Tower was completed in 1890.",
     "decision": "accept", "comment": "the Eiffel Tower article says 1889", "reviewer": "ana",
     "decided_at": "2026-11-23T18:01:02+00:00"}

- ``decision`` is ``accept`` (a real contradiction: the fact counts as confirmed) or ``reject``
  (a false alarm). A skipped fact simply has no line.
- ``claim_id`` (the run's id for the fact) or ``fact`` (its exact text) names the fact; at least
  one is required, and ``claim_id`` wins when both are given. ``comment``, ``reviewer`` and
  ``decided_at`` are optional.
- When a fact has several lines, the last one counts, so changing one's mind is another line.

``claire review DIR`` writes this file, and ``claire estimate --from DIR`` / ``claire audit``
read it; any other review tool (the web app's store) can export to the same format and be read
with ``--decisions FILE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError, model_validator

from claire.errors import DatasetError
from claire.files import append_line, read_jsonl

REVIEWS = "reviews.jsonl"


class Decision(BaseModel):
    """One person's decision on one flagged fact."""
    claim_id: str | None = None
    fact: str | None = None
    decision: Literal["accept", "reject"]
    comment: str | None = None
    reviewer: str | None = None
    decided_at: str | None = None

    @model_validator(mode="after")
    def _names_a_fact(self) -> Decision:
        if not (self.claim_id or "").strip() and not (self.fact or "").strip():
            raise ValueError("give claim_id or fact to say which fact the decision is about")
        return self


def _fact_key(text: str) -> str:
    return "fact:" + " ".join(text.split()).casefold()


class Decisions:
    """The decisions of one or more files, last line per fact winning (later files win too)."""

    def __init__(self, decisions: Iterable[Decision] = ()) -> None:
        self.by_id: dict[str, Decision] = {}
        self.by_fact: dict[str, Decision] = {}
        for decision in decisions:
            self.add(decision)

    def add(self, decision: Decision) -> None:
        """Add a decision (a later one for the same fact replaces an earlier one)."""
        if decision.claim_id:
            self.by_id[decision.claim_id] = decision
        else:
            self.by_fact[_fact_key(decision.fact or "")] = decision

    def get(self, claim_id: str, fact: str = "") -> Decision | None:
        """The decision on a fact, by its claim id or else by its text."""
        return self.by_id.get(claim_id) or (self.by_fact.get(_fact_key(fact)) if fact else None)

    def __len__(self) -> int:
        return len(self.by_id) + len(self.by_fact)


def _problem(error: ValidationError) -> str:
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    message = item["msg"].removeprefix("Value error, ")
    return f"field '{where}': {message}" if where else message


def read_decisions(path: str | Path, *, missing_ok: bool = False) -> list[Decision]:
    """The decisions in a JSONL file, in file order. A malformed line is an error naming
    FILE:LINE, except a torn last line (no newline: a write cut short), which is ignored."""
    path = Path(path)
    if missing_ok and not path.exists():
        return []
    decisions: list[Decision] = []
    for line in read_jsonl(path, what="decisions"):
        if line.torn:
            break
        if not line.ok:
            raise DatasetError(f"{path}:{line.number}: {line.problem}")
        if not isinstance(line.value, dict):
            raise DatasetError(f"{path}:{line.number}: expected a JSON object")
        try:
            decisions.append(Decision.model_validate(line.value))
        except ValidationError as error:
            if line.unterminated:
                break
            raise DatasetError(f"{path}:{line.number}: {_problem(error)}") from None
    return decisions


def load_decisions(run_dir: str | Path, extra: Iterable[str | Path] = ()) -> Decisions:
    """The run directory's own ``reviews.jsonl`` (if any), then each ``extra`` file on top."""
    found = read_decisions(Path(run_dir) / REVIEWS, missing_ok=True)
    for path in extra:
        found += read_decisions(path)
    return Decisions(found)


def append_decision(run_dir: str | Path, decision: Decision) -> None:
    """Append one decision to ``DIR/reviews.jsonl`` durably (one write, then fsync)."""
    if decision.decided_at is None:
        decision = decision.model_copy(update={"decided_at": datetime.now(UTC).isoformat(timespec="seconds")})
    append_line(Path(run_dir) / REVIEWS, (decision.model_dump_json(exclude_none=True) + "\n").encode("utf-8"))
