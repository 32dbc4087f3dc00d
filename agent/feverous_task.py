"""The FEVEROUS task's side of the systems: showing evidence elements to the model, reading its
three-way label and cited element ids back, and FEVEROUS's limits on predicted evidence.

With ``agent.task = "feverous"`` the prompt library renders the ``*.feverous.j2`` variants of the
controller, verifier and NLI templates (see :mod:`claire.agent.tasks`); the verifier of CLAIRE and
retrieve-and-verify then answers ``<label>`` plus ``<evidence>`` element ids, and the NLI pipeline
combines its per-passage labels and cited ids with :func:`combine_nli`.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

from claire.agent.llm import LLMClient
from claire.agent.system import Assessment, Claim
from claire.agent.verifier import Verdict
from claire.prompts import PromptLibrary

LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
MAX_SENTENCES = 5
MAX_CELLS = 25
# element types FEVEROUS's scorer counts against the table budget; the rest count as sentences
TABLE_KINDS = ("cell", "header_cell", "table_caption", "item")
_ELEMENT = re.compile(r"^(?P<page>.+?)_(?P<kind>header_cell|cell|table_caption|sentence|item|section|title)(?:_(?P<pos>\d+(?:_\d+)*))?$")
_TAG = r"<\s*{0}\s*>(.*?)<\s*/\s*{0}\s*>"


def element_kind(element_id: str) -> str | None:
    """``sentence``, ``cell``, ``header_cell``, ``table_caption``, ``item`` ... of a FEVEROUS id."""
    match = _ELEMENT.match(element_id)
    return match.group("kind") if match else None


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


def element_rows(elements: list[dict[str, str]] | None) -> list[list[dict[str, str]]]:
    """Elements grouped into display lines: the cells of one table row share a line."""
    rows: list[list[dict[str, str]]] = []
    last_row: tuple[str, str] | None = None
    for element in elements or []:
        match = _ELEMENT.match(element["id"])
        row = None
        if match and match.group("kind") in ("cell", "header_cell") and match.group("pos"):
            table, r, *_ = match.group("pos").split("_") + [""]
            row = (match.group("page") + "/" + table, r)
        if row is not None and row == last_row:
            rows[-1].append(element)
        else:
            rows.append([element])
        last_row = row
    return rows


def document_view(documents: list[Any]) -> list[dict[str, Any]]:
    """Evidence as template data: number, place, content and, when the block has element ids,
    its elements grouped into lines (``rows``) for the model to cite."""
    return [
        {"n": d.n, "document_title": d.document_title, "section_title": d.section_title, "content": d.content,
         "rows": element_rows(d.elements)}
        for d in documents
    ]


def known_elements(documents: list[Any]) -> list[str]:
    return list(dict.fromkeys(e["id"] for d in documents for e in (d.elements or [])))


def _last_tag(text: str, name: str) -> str | None:
    found = re.findall(_TAG.format(name), html.unescape(text or ""), re.IGNORECASE | re.DOTALL)
    return found[-1].strip() if found else None


def parse_label(text: str) -> str | None:
    """The three-way label of an answer: its last ``<label>`` tag, read leniently; None if unreadable."""
    from claire.agent.baselines import parse_nli_label  # the shared lenient reader

    tagged = _last_tag(text, "label")
    return parse_nli_label(f"<label>{tagged}</label>") if tagged is not None else None


def cited_elements(text: str, known: list[str]) -> list[str]:
    """The known element ids written in the answer's last ``<evidence>`` tag (the whole answer when
    it has no such tag), in the order written; ids the model made up (not among the documents
    shown) are dropped."""
    cited = _last_tag(text, "evidence")
    if cited is None:
        cited = html.unescape(text or "")
    if not cited or not known:
        return []
    found: list[tuple[int, int, str]] = []
    for element in known:
        for match in re.finditer(rf"(?<![\w]){re.escape(element)}(?![\w])", cited):
            found.append((match.start(), match.end(), element))
    found.sort(key=lambda hit: (hit[0], -(hit[1] - hit[0])))
    ordered, end = [], -1
    for start, stop, element in found:  # a longer id wins over an id it contains
        if start >= end:
            ordered.append(element)
            end = stop
    return list(dict.fromkeys(ordered))


async def judge(
    claim: Claim, *, documents: list[Any], clarifications: list[dict[str, str]], llm: LLMClient, prompts: PromptLibrary
) -> Verdict:
    """The FEVEROUS verifier: a label and cited element ids; an unreadable label is asked for once more."""
    messages = prompts.render("verifier", claim=claim.text, clarifications=clarifications, documents=document_view(documents))
    response = await llm.chat(messages)
    text = response.content
    label = parse_label(text)
    if label is None:
        follow_up = messages + [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": "Your answer has no usable <label>. Reply with <label>SUPPORTS</label>, "
                                        "<label>REFUTES</label> or <label>NOT ENOUGH INFO</label>, then <evidence> with the element ids you rely on."},
        ]
        retry = await llm.chat(follow_up)
        text = response.content + "\n" + retry.content
        label = parse_label(retry.content)
    return Verdict(
        score=None,
        restated_claim=None,
        analysis=_last_tag(text, "analysis") or text.strip(),
        raw=text,
        error=None if label else "the verifier gave no usable <label> (asked twice)",
        label=label,
        evidence_elements=limit_evidence(cited_elements(text, known_elements(documents))),
    )


def combine_nli(assessment: Assessment, judgements: list[dict[str, Any]]) -> None:
    """The NLI pipeline's three-way answer: REFUTES when some passage refutes and at least as many
    refute as support, else SUPPORTS when one supports, else NOT ENOUGH INFO; the evidence is the
    elements cited by the passages that carry the chosen label (by NOT ENOUGH INFO: all cited)."""
    counts = {label: sum(1 for j in judgements if (j.get("label") or "NOT ENOUGH INFO") == label) for label in LABELS}
    if counts["REFUTES"] and counts["REFUTES"] >= counts["SUPPORTS"]:
        label = "REFUTES"
    elif counts["SUPPORTS"]:
        label = "SUPPORTS"
    else:
        label = "NOT ENOUGH INFO"
    backing = [j for j in judgements if label == "NOT ENOUGH INFO" or j.get("label") == label]
    assessment.label = label
    assessment.evidence_elements = limit_evidence(e for j in backing for e in j.get("elements", []))
