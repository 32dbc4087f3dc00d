"""Where the paper preset's prompts still differ in wording from the paper's (its Figs 14-22),
each difference named once: the template, what differs, and why.

Every template is written in this project's words: the paper's situations, rules, scores and
procedures carry over, its sentences do not. What else differs is listed here, specifically, and
read from here by every run's ``report.md`` and by the documentation's fidelity page (a MkDocs
hook), so the two never disagree. A leaf module (no imports from CLAIRE).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WordingDifference:
    """One way a template of the paper preset is worded otherwise than the paper's prompt."""

    template: str
    differs: str  # what the template says (or leaves out) that the paper's does not
    why: str


WORDING_DIFFERENCES: tuple[WordingDifference, ...] = (
    WordingDifference(
        "every template", "sentences in this project's words; the paper's situations, rules, worked cases, scores "
        "and procedures are kept", "the prompts are written anew rather than copied"),
    WordingDifference(
        "every template", "retrieved text, the fact's paragraph and notes stand inside fences (<documents>, <passage>, "
        "<notes>) that the prompt calls data, never instructions", "a passage of Wikipedia must not be able to steer the "
        "model (prompt injection)"),
    WordingDifference(
        "controller", "offers finish() (agent.finish_action), which the paper's controller prompt does not",
        "WikiCollide's released traces end with such an action (give_up); agent.finish_action = false removes it"),
    WordingDifference(
        "controller", "a person's comment on a flagged verdict is shown in a <reviewer_feedback> fence of its own, "
        "said to be the reviewer's view and data", "the paper's human-feedback loop, with the person's words kept apart "
        "from Wikipedia's"),
    WordingDifference(
        "fact_extraction", "asks for no reasoning block before the facts and shows a one-line example of the answer's "
        "format, where the paper's prompt has a reasoning block and no example",
        "the answer names the <source> sentence of each fact, which the page highlights; the example fixes that format"),
    WordingDifference(
        "clarify_entity", "its two worked examples use other entities (British princesses named Louise, French "
        "scientists named Pierre) in the paper's situations (royals of one name who may be relatives, several French "
        "scientists of one first name)", "written anew; the numbered results and numbered answers are kept"),
)
"""The paper preset's remaining wording differences, in template order."""
