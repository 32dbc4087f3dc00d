"""The FEVEROUS verifier's side: reading a three-way label and cited element ids out of an answer,
FEVEROUS's limits on predicted evidence, and how the NLI pipeline's per-passage labels combine.

The ``*.feverous.j2`` variants of the controller, verifier and NLI templates show each passage's
elements (:attr:`claire.domain.Passage.rows`) for the model to cite by id.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from claire.domain import Claim, element_kind, Evidence, known_elements
from claire.llm.answers import NLI_LABELS, cited_elements, nli_label, tag_text
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.prompts.answers import Answer
from claire.tasks.base import NLIJudgement, Judgement, judging_prompt

LABELS = NLI_LABELS
MAX_SENTENCES = 5
MAX_CELLS = 25
# element types FEVEROUS's scorer counts against the table budget; the rest count as sentences
TABLE_KINDS = ("cell", "header_cell", "table_caption", "item")


def limit_evidence(ids: Iterable[str], *, max_sentences: int = MAX_SENTENCES, max_cells: int = MAX_CELLS) -> list[str]:
    """Distinct ids in order, keeping at most ``max_sentences`` sentences and ``max_cells`` table
    elements (cells, header cells, captions, list items), as FEVEROUS's scorer truncates them."""
    kept: list[str] = []
    sentences = cells = 0
    for element in dict.fromkeys(ids):
        if element_kind(element) in TABLE_KINDS:
            if cells < max_cells:
                kept.append(element)
                cells += 1
        elif sentences < max_sentences:
            kept.append(element)
            sentences += 1
    return kept


def read_label(answer: str | Answer) -> str | None:
    """The three-way label of an answer: the typed answer's, else its last ``<label>`` tag, read
    leniently; None if unreadable."""
    if isinstance(answer, Answer):
        return getattr(answer, "label", None)
    tagged = tag_text(answer, "label")
    return nli_label(f"<label>{tagged}</label>") if tagged is not None else None


async def judge_label(claim: Claim, documents: Sequence[Evidence], clarifications: list[dict[str, str]],
                      llm: ChatClient, prompts: PromptLibrary) -> Judgement:
    """The FEVEROUS verifier: a label and cited element ids; an unreadable label is asked for once
    more. The passages are fitted to the model's window as for every judging prompt."""
    prompt, fit = judging_prompt("verifier", claim, documents, clarifications, llm, prompts)
    refits = []

    def refit(reserve: int) -> list:
        smaller, note = judging_prompt("verifier", claim, documents, clarifications, llm, prompts, reserve=reserve)
        refits.append(note)
        return smaller

    asked = await llm.ask(prompt, read_label, refit=refit,
                          follow_up=lambda problem, detail="": prompts.render("follow_up", wanted="label", problem=problem, detail=detail))
    return Judgement(
        fit=refits[-1] if refits else fit,
        label=asked.value,
        analysis=asked.field("analysis") or asked.text.strip(),
        raw=asked.text,
        error=asked.failure("the verifier", "label"),
        evidence_elements=limit_evidence(cited_elements(
            "\n".join(getattr(asked.parsed, "evidence", [])) if asked.parsed is not None else asked.text,
            known_elements(documents))),
    )


def combine_nli(judgements: list[NLIJudgement]) -> tuple[str, list[str]]:
    """The NLI pipeline's three-way answer: REFUTES when some passage refutes and at least as many
    refute as support, else SUPPORTS when one supports, else NOT ENOUGH INFO; the evidence is the
    elements cited by the passages that carry the chosen label (by NOT ENOUGH INFO: all cited)."""
    counts = {label: sum(1 for j in judgements if (j.label or "NOT ENOUGH INFO") == label) for label in LABELS}
    if counts["REFUTES"] and counts["REFUTES"] >= counts["SUPPORTS"]:
        label = "REFUTES"
    elif counts["SUPPORTS"]:
        label = "SUPPORTS"
    else:
        label = "NOT ENOUGH INFO"
    backing = [j for j in judgements if label == "NOT ENOUGH INFO" or j.label == label]
    return label, limit_evidence(e for j in backing for e in j.elements)
