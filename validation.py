"""One way to say what is wrong with data that failed a pydantic model: ``field a.b: problem``
for each error, joined with "; ". Used for datasets, corpora, prediction files and the config.
A leaf module, like ``errors``.
"""

from __future__ import annotations

from pydantic import ValidationError


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
