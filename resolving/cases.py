"""A contradiction to resolve, built from a flagged check: what the research itself found.

:func:`name_conflict` asks the model, from the research's own answer (the verdict's analysis, the
contradictions it reported and the passages it read, ``prompts/conflict.j2``), which passage is in
conflict with the fact and what each side states on that point. :func:`case_from_check` turns
that into a :class:`~claire.tasks.sides.records.SidesCase`: the fact with its own citations (the
claim's passage's when it carries them, as a patrolled edit's ``<ref>`` s do, else those of its
block in the index), the conflicting passage with its block's citations and the sentence that
states its value, and the other passages read. Only when the model named nothing usable does the
case fall back to word overlap (:func:`contradicting_evidence`, the values left to the resolver),
and the case says so (``values_from``).

:func:`flagged_assessment` rebuilds a flagged record of a run directory (its passages from the
trace) so a run's flags can be resolved later.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from claire.domain import Assessment, Block, Claim, Evidence
from claire.indexes.registry import Searcher
from claire.llm.answers import tag_text
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.prompts.answers import Answer, ConflictAnswer
from claire.resolving.values import YEAR, gives_value, tokens
from claire.tasks.sides.records import OtherPassage, Side, SidesCase

log = logging.getLogger(__name__)

_CITED = re.compile(r"\[(\d+)\]")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_NONE = ("", "none", "null", "n/a", "-", "—")


@dataclass(frozen=True)
class Conflict:
    """What the model named: the passage [n] in conflict and what each side states on that point."""

    document: int
    fact_value: str
    document_value: str


# -- the model's own naming of the conflict -------------------------------------------------------
def read_conflict(answer: str | Answer) -> Conflict | None | bool:
    """The conflict an answer names (the typed answer's, else its tags'); False when it says there is
    none; None when it cannot be read."""
    if isinstance(answer, ConflictAnswer):
        if answer.conflicting_document is None:
            return False
        number, fact_value, document_value = str(answer.conflicting_document), answer.fact_value, answer.document_value
    else:
        tagged = tag_text(answer, "conflicting_document")
        if tagged is None:
            return None
        number = tagged.strip().strip("[]").lower()
        fact_value, document_value = tag_text(answer, "fact_value") or "", tag_text(answer, "document_value") or ""
    if number in _NONE:
        return False
    if not number.isdigit():
        return None
    fact_value = " ".join(fact_value.split())
    document_value = " ".join(document_value.split())
    if fact_value.lower() in _NONE or document_value.lower() in _NONE:
        return None
    return Conflict(document=int(number), fact_value=fact_value[:200], document_value=document_value[:200])


async def name_conflict(claim: Claim, assessment: Assessment, llm: ChatClient, prompts: PromptLibrary) -> Conflict | None:
    """The conflict the research found, as the model names it from the research's own answer (None
    when it names none, or none of the passages read)."""
    if not assessment.evidence:
        return None
    prompt = prompts.render("conflict", claim=claim.text, context=claim.context, analysis=assessment.reasoning or "",
                            reported=list(assessment.reported), documents=assessment.evidence)
    asked = await llm.ask(prompt, read_conflict, follow_up=lambda problem, detail="": prompts.render(
        "follow_up", wanted="conflicting_document", problem=problem, detail=detail))
    found = asked.value
    if not isinstance(found, Conflict):
        if found is None:
            log.warning("the conflict was not named: %s", asked.failure("the conflict step", "conflicting_document"))
        return None
    if not any(e.n == found.document for e in assessment.evidence):
        log.warning("the conflict names document [%d], which the research did not read", found.document)
        return None
    return found


# -- word overlap: the fallback when the model named nothing ------------------------------------------
def _sentence_score(sentence: str, fact: str) -> int:
    """How well a sentence answers to a fact: the words they share, and two more when it holds a
    number of the same kind (a year for a year, a number for a number) — a rival value."""
    words = {t.casefold() for t in tokens(fact) if not t[0].isdigit()}
    numbers = [t for t in tokens(fact) if t[0].isdigit()]
    found = tokens(sentence)
    score = len(words & {t.casefold() for t in found if not t[0].isdigit()})
    years = any(YEAR.fullmatch(n) for n in numbers)
    if numbers and any(t[0].isdigit() and (bool(YEAR.fullmatch(t)) == years) for t in found):
        score += 2
    return score


def _pieces(text: str, language: str | None = None) -> list[str]:
    if language and language != "en":  # that language's sentence rules, line by line (an infobox's fields)
        from claire.languages import sentence_spans

        found = [line[a:b] for line in text.splitlines() for a, b in sentence_spans(line, language)]
        return found or [text.strip()]
    return [p.strip() for p in _SENTENCES.split(text) if p.strip()] or [text.strip()]


def closest_sentence(text: str, to: str) -> tuple[str, int]:
    """The sentence (or line: a table row, an infobox field) of ``text`` that answers best to ``to``, and its score."""
    pieces = _pieces(text)
    best = max(pieces, key=lambda p: (_sentence_score(p, to), -len(p)))
    return best, _sentence_score(best, to)


def sentence_giving(text: str, value: str, fact: str, language: str | None = None) -> str:
    """The sentence (or line) of ``text`` (written in ``language``) that gives ``value``, the one
    closest to ``fact`` among several; else the sentence closest to the fact."""
    pieces = _pieces(text, language)
    giving = [p for p in pieces if gives_value(p, value)]
    if giving:
        return max(giving, key=lambda p: (_sentence_score(p, fact), -len(p)))
    return max(pieces, key=lambda p: (_sentence_score(p, fact), -len(p)))


def contradicting_evidence(assessment: Assessment) -> Evidence | None:
    """By word overlap, the passage a flagged assessment found in conflict with its fact: of the
    passages it read, the one whose sentence answers best to the fact (a rival value, shared
    words), a passage its reported contradiction or its reasoning cites ([n]) counting one more,
    prose before tables."""
    cited = {int(n) for text in [*assessment.reported, assessment.reasoning or ""] for n in _CITED.findall(text or "")}
    ranked = sorted(assessment.evidence, key=lambda e: (
        -(closest_sentence(e.content, assessment.claim_text)[1] + (1 if e.n in cited else 0)),
        e.block_type != "text", e.n))
    return ranked[0] if ranked else None


def own_block(claim: Claim, retriever: Searcher | None) -> Block | None:
    """The block of the fact's own article that states it (its citations are the fact's): the
    claim's block by id when the index has it, else the best match among the article's blocks."""
    title = claim.context.document_title
    if retriever is None or not title:
        return None
    document = getattr(retriever, "document", None)
    blocks = list(document(title)) if document is not None else [
        h.block for h in retriever.search(claim.text, k=30) if h.block.document_title == title]
    if claim.context.id:
        same = next((b for b in blocks if b.id == claim.context.id), None)
        if same is not None:
            return same
    wanted = {t.casefold() for t in tokens(claim.text)}
    section = claim.context.section_title
    return max(blocks, key=lambda b: (bool(section) and b.section_title == section,
                                      len(wanted & {t.casefold() for t in tokens(b.content)})), default=None)


# -- the case ---------------------------------------------------------------------------------------
def case_from_check(claim: Claim, assessment: Assessment, retriever: Searcher | None,
                    conflict: Conflict | None = None) -> SidesCase | None:
    """The contradiction a flagged check found, as a case to resolve (None without a passage): the
    passage and the two values the model named (``conflict``), else the passage found by word
    overlap; the fact with its own citations; the other passages the research read."""
    evidence = next((e for e in assessment.evidence if conflict and e.n == conflict.document), None)
    if evidence is None:
        conflict = None
        evidence = contradicting_evidence(assessment)
    if evidence is None:
        return None
    context = claim.context
    known = context.citations is not None  # a passage that carries its citations (an edit's own <ref>s)
    block = None if known else own_block(claim, retriever)
    content = context.content or (block.content if block else "")
    fact_sentence = (sentence_giving(content, conflict.fact_value, claim.text, context.language) if conflict and content
                     else closest_sentence(content, claim.text)[0] if content else None)
    fact = Side(text=claim.text, document_title=context.document_title, section_title=context.section_title,
                content=content, language=context.language or (block.language if block else None),
                url=context.url or (block.url if block else None),
                revision_id=context.revision_id or (block.revision_id if block else None),
                citations=list(context.citations or []) if known else list((block.citations if block else None) or []),
                block_id=context.id or (block.id if block else None), sentence=fact_sentence)
    text = (sentence_giving(evidence.content, conflict.document_value, claim.text, evidence.language) if conflict
            else closest_sentence(evidence.content, claim.text)[0])
    passage = Side(text=text, document_title=evidence.document_title, section_title=evidence.section_title,
                   content=evidence.content, url=evidence.url, language=evidence.language, revision_id=evidence.revision_id,
                   citations=list(evidence.citations or []), block_id=evidence.id, sentence=text)
    read = [OtherPassage(document_title=e.document_title, content=e.content, citations=list(e.citations or []))
            for e in assessment.evidence if e.id != evidence.id and e.document_title not in
            (fact.document_title, passage.document_title)]
    return SidesCase(id=assessment.claim_id, fact=fact, passage=passage, others=None, read=read,
                     values=(conflict.fact_value, conflict.document_value) if conflict else None,
                     values_from="model" if conflict else "word overlap")


# -- a run's flagged record -------------------------------------------------------------------------
def flagged_assessment(line: dict[str, Any], claim: Claim) -> Assessment:
    """The assessment of a run's predictions line, its passages rebuilt from the trace (a trace keeps
    no citations: the caller adds them from the index)."""
    evidence: dict[str, Evidence] = {}
    reported: list[str] = []
    for item in line.get("trace") or []:
        output = item.get("action_output")
        if item.get("action_name") == "report_inconsistency":
            reported.append(str(item.get("action_argument") or ""))
        for passage in output if isinstance(output, list) else []:
            if isinstance(passage, dict) and passage.get("content") and passage.get("block_id"):
                evidence.setdefault(passage["block_id"], Evidence(
                    n=int(passage.get("n") or len(evidence) + 1), id=passage["block_id"], content=passage["content"],
                    document_title=passage.get("document_title") or "", section_title=passage.get("section_title") or "",
                    url=passage.get("url"), block_type=passage.get("block_type") or "text",
                    language=passage.get("language")))
    return Assessment(claim_id=line["claim_id"], system=line.get("system") or "?", claim_text=claim.text,
                      score=line.get("score"), threshold=line.get("threshold") or 0.5,
                      verdict=line.get("verdict"), evidence=list(evidence.values()), reported=reported,
                      reasoning=line.get("reasoning"))
