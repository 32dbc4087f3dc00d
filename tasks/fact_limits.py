"""How long one fact may be: a sentence or two, not a passage.

A fact pasted with a whole paragraph (or 50 KB of an article by mistake) would be searched and
judged as one claim, costing many tokens for a meaningless answer. Above :data:`LONG_FACT_CHARS`
a fact earns a warning; above the configurable limit (``agent.max_fact_chars``) it is refused
with a pointer to ``claire scan``, which splits a passage into facts first.
"""

from __future__ import annotations

from claire.errors import ConfigError, DatasetError

LONG_FACT_CHARS = 400  # about two long sentences
DEFAULT_MAX_FACT_CHARS = 2000
SCAN_HINT = "to check a passage or a whole article, use `claire scan --title TITLE --file PASSAGE.txt`, which splits it into facts"


def fact_length_problem(text: str, limit: int, *, what: str = "the fact") -> tuple[str, bool] | None:
    """(message, refused) when ``text`` is long for a fact, or None. Refused above ``limit``."""
    size = len(text)
    if size > limit:
        return (f"{what} is {size:,} characters long, over the limit of {limit:,} for one fact "
                f"(agent.max_fact_chars); {SCAN_HINT}"), True
    if size > min(LONG_FACT_CHARS, limit):
        return f"{what} is {size:,} characters long, more than a sentence or two; {SCAN_HINT}", False
    return None


def check_fact(text: str, limit: int, *, what: str = "the fact") -> str | None:
    """A warning for a long fact (or None); a ConfigError for one over ``limit``."""
    problem = fact_length_problem(text, limit, what=what)
    if problem is None:
        return None
    message, refused = problem
    if refused:
        raise ConfigError(message)
    return message


def check_claims(claims: list, limit: int, *, source: str) -> list[str]:
    """Warnings for long claims of a dataset; a DatasetError naming those over ``limit``."""
    warnings, refused = [], []
    for claim in claims:
        problem = fact_length_problem(claim.text, limit, what=f"claim {claim.claim_id}")
        if problem is None:
            continue
        (refused if problem[1] else warnings).append(claim.claim_id)
    if refused:
        shown = ", ".join(refused[:5]) + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
        raise DatasetError(
            f"{source}: {len(refused)} claim(s) are over the limit of {limit:,} characters for one fact "
            f"(agent.max_fact_chars): {shown}; remove them or raise the limit — {SCAN_HINT}"
        )
    if warnings:
        shown = ", ".join(warnings[:5]) + (f" and {len(warnings) - 5} more" if len(warnings) > 5 else "")
        return [f"{len(warnings)} claim(s) of {source} are longer than a sentence or two: {shown}"]
    return []
