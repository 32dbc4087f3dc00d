"""Saying what is wrong with data that failed a pydantic model — ``field a.b: problem`` for each
error, joined with "; " (:func:`describe`; datasets, corpora, prediction files and the config), or
``field 'a.b' is missing`` (:func:`quoted`; FEVEROUS and AmbigQA files) — and reading one record of
a data file into its model (:func:`validated_record`). And the field types records share:
:data:`NonBlank` text and :data:`RecordId` (an id published as a number is read as text). A leaf
module beside ``errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ValidationError

from claire.errors import DatasetError

Record = TypeVar("Record", bound=BaseModel)


def not_blank(value: str) -> str:
    """The text itself; a ValueError when it is empty or only spaces."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


NonBlank = Annotated[str, AfterValidator(not_blank)]
"""Text that must not be empty or only spaces."""

RecordId = Annotated[str, BeforeValidator(_number_as_text), AfterValidator(not_blank)]
"""A record's id: text, not empty; a dataset that publishes it as a number is read as that number's text."""


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """(dotted field path, short problem) for each error; the path is "" for the whole record."""
    found = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        problem = "missing" if item["type"] == "missing" else item["msg"].removeprefix("Value error, ")
        found.append((where, problem))
    return found


def describe(error: ValidationError) -> str:
    """Every problem on one line: ``field claim.text: missing; field label: ...``."""
    return "; ".join(f"field {where}: {problem}" if where else problem for where, problem in problems(error))


def quoted(error: ValidationError) -> str:
    """Every problem on one line, each field quoted: ``field 'claim' is missing; field 'label' ...``."""
    return "; ".join(f"field '{where or 'record'}' " + ("is missing" if problem == "missing" else problem)
                     for where, problem in problems(error))


def validated_record(model: type[Record], value: Any, where: str, *,
                     problem: Callable[[ValidationError], str] = describe) -> Record:
    """``value`` (one record of a data file) as ``model``; a DatasetError ``WHERE: what is wrong``
    when it is not a JSON object or not a valid record (``problem`` words the errors)."""
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise DatasetError(f"{where}: {problem(error)}") from None
