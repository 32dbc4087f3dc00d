"""The report_inconsistency tool: record a candidate contradiction and say what happens next."""

from __future__ import annotations


def report_inconsistency(evidence: str, reported: list[str], *, stops_research: bool) -> str:
    """Append the evidence to ``reported`` and return the observation shown to the controller."""
    evidence = evidence.strip()
    if not evidence:
        return "report_inconsistency needs the evidence: quote the passage that contradicts the fact."
    reported.append(evidence)
    if stops_research:
        return "Inconsistency recorded. The research ends here and the evidence goes to the final judgement."
    return "Inconsistency recorded. Continue researching, or call finish() when you are done."
