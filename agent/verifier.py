"""The verifier shared by CLAIRE and retrieve-and-verify: one LLM call over the claim, its
context, the clarifications and all gathered documents, parsed into a score in [0, 1]; plus the
optional two-sided report (the strongest case for "consistent" and for "inconsistent").
"""

from __future__ import annotations

import asyncio
import html
import re
from dataclasses import dataclass, field
from typing import Any

from claire.agent.budget import FitNote, fit_documents
from claire.agent.llm import LLMClient
from claire.agent.system import Claim
from claire.prompts import PromptLibrary

_SCORE_TAG = re.compile(r"<\s*inconsistency_score\s*>\s*(.*?)\s*<\s*/\s*inconsistency_score\s*>", re.IGNORECASE | re.DOTALL)
_SCORE_LINE = re.compile(r"inconsistency[_ ]score\W{0,5}([-+]?\d[^\n]{0,20})", re.IGNORECASE)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_FRACTION = re.compile(rf"({_NUMBER})\s*(?:/|out\s+of)\s*({_NUMBER})", re.IGNORECASE)
_PERCENT = re.compile(rf"({_NUMBER})\s*%")
_PLAIN = re.compile(_NUMBER)


def _tag(text: str, name: str) -> str | None:
    text = html.unescape(text or "")
    matches = re.findall(rf"<\s*{name}\s*>(.*?)<\s*/\s*{name}\s*>", text, re.IGNORECASE | re.DOTALL)
    return matches[-1].strip() if matches else None


def _to_score(raw: str) -> float | None:
    """0.7, 70%, 7/10 and "7 out of 10" all read as 0.7; anything else outside [0, 1] is unusable
    (asked again) rather than guessed at. Slightly negative values clamp to 0."""
    if match := _FRACTION.search(raw):
        numerator, denominator = float(match.group(1)), float(match.group(2))
        value = numerator / denominator if denominator > 0 else None
    elif match := _PERCENT.search(raw):
        value = float(match.group(1)) / 100
    elif match := _PLAIN.search(raw):
        value = float(match.group())
    else:
        return None
    if value is None or value > 1.0:
        return None
    return max(value, 0.0)


def parse_score(text: str) -> float | None:
    """The model's inconsistency score, read leniently and clamped to [0, 1]; None when absent.

    The LAST score tag wins, so a passage the model quotes earlier (which could contain a planted
    tag) cannot decide the result.
    """
    text = html.unescape(text or "")  # small models sometimes answer with &lt;tags&gt;
    tags = _SCORE_TAG.findall(text)
    for raw in reversed(tags):
        score = _to_score(raw)
        if score is not None:
            return score
    lines = _SCORE_LINE.findall(text)
    return _to_score(lines[-1]) if lines else None


def parse_tagged_score(text: str, tag: str) -> float | None:
    """A score in [0, 1] from the last ``<tag>`` that holds a usable number (read as leniently as
    the inconsistency score: 0.7, 70%, 7/10), else from a ``tag: 0.7`` line; None when absent."""
    text = html.unescape(text or "")
    name = re.escape(tag)
    for raw in reversed(re.findall(rf"<\s*{name}\s*>\s*(.*?)\s*<\s*/\s*{name}\s*>", text, re.IGNORECASE | re.DOTALL)):
        score = _to_score(raw)
        if score is not None:
            return score
    spaced = name.replace("_", "[_ ]")
    lines = re.findall(rf"{spaced}\W{{0,5}}?([-+]?\.?\d[^\n]{{0,20}})", text, re.IGNORECASE)
    return _to_score(lines[-1]) if lines else None


def tag_text(text: str, name: str) -> str | None:
    """The content of the last ``<name>...</name>`` in ``text`` (stripped), or None."""
    return _tag(text, name)


@dataclass
class Verdict:
    score: float | None
    restated_claim: str | None
    analysis: str | None
    raw: str
    error: str | None = None
    label: str | None = None  # task "feverous": SUPPORTS | REFUTES | NOT ENOUGH INFO
    evidence_elements: list[str] = field(default_factory=list)  # task "feverous": cited element ids
    fit: FitNote | None = None  # what the context budget left out of the prompt


def document_view(documents: list[Any]) -> list[dict[str, Any]]:
    """Evidence objects (with n, document_title, section_title, content) as template data."""
    return [
        {"n": d.n, "document_title": d.document_title, "section_title": d.section_title, "content": d.content}
        for d in documents
    ]


def _claim_vars(claim: Claim, clarifications: list[dict[str, str]], documents: list[Any]) -> dict[str, Any]:
    return {
        "claim": claim.text,
        "context": claim.context.model_dump(),
        "clarifications": clarifications,
        "documents": document_view(documents),
    }


def fitted_prompt(
    name: str, claim: Claim, documents: list[Any], clarifications: list[dict[str, str]], llm: LLMClient,
    prompts: PromptLibrary, *, reserve: int = 0,
) -> tuple[list[dict[str, Any]], FitNote]:
    """Render prompt ``name`` with the gathered passages de-duplicated, most relevant first, cut to
    fit the model's window with room for the answer (and ``reserve`` more tokens)."""
    render = lambda docs: prompts.render(name, **_claim_vars(claim, clarifications, docs))  # noqa: E731
    _, messages, note = fit_documents(render, documents, claim=claim.text, count=llm.count_tokens,
                                      budget=llm.prompt_budget() - reserve, prompt=name)
    return messages, note


async def verify(
    claim: Claim, *, documents: list[Any], clarifications: list[dict[str, str]], llm: LLMClient, prompts: PromptLibrary,
    task: str = "wikicollide",
) -> Verdict:
    """Ask for the score; a missing or malformed score is asked for once more, then an error.
    Task "feverous" asks for a three-way label and evidence element ids instead."""
    if task == "feverous":
        from claire.agent.feverous_task import judge

        return await judge(claim, documents=documents, clarifications=clarifications, llm=llm, prompts=prompts)
    messages, fit = fitted_prompt("verifier", claim, documents, clarifications, llm, prompts)
    response = await llm.chat(messages)
    score = parse_score(response.content)
    text = response.content
    if score is None:
        extra = [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": "Your answer has no usable <inconsistency_score>. Reply with the tag and a number from 0 to 1, for example <inconsistency_score>0.2</inconsistency_score>."},
        ]
        if llm.count_tokens(messages + extra) > llm.prompt_budget():  # the first answer needs room too
            messages, fit = fitted_prompt("verifier", claim, documents, clarifications, llm, prompts,
                                          reserve=llm.count_tokens(extra))
        retry = await llm.chat(messages + extra)
        score = parse_score(retry.content)
        text = response.content + "\n" + retry.content
    return Verdict(
        score=score,
        restated_claim=_tag(text, "restated_claim"),
        analysis=_tag(text, "analysis") or text.strip(),
        raw=text,
        error=None if score is not None else "the verifier gave no usable <inconsistency_score> (asked twice)",
        fit=fit,
    )


async def two_sided_report(
    claim: Claim, *, documents: list[Any], clarifications: list[dict[str, str]], llm: LLMClient, prompts: PromptLibrary,
    notes: list[FitNote] | None = None,
) -> dict[str, str]:
    """The strongest case for each verdict, each citing [n]; the two calls run concurrently.
    What the context budget left out of each prompt is appended to ``notes`` when given."""
    consistent, consistent_fit = fitted_prompt("report_consistent", claim, documents, clarifications, llm, prompts)
    inconsistent, inconsistent_fit = fitted_prompt("report_inconsistent", claim, documents, clarifications, llm, prompts)
    if notes is not None:
        notes.extend([consistent_fit, inconsistent_fit])
    answers = await asyncio.gather(llm.chat(consistent), llm.chat(inconsistent))
    return {"consistent": answers[0].content.strip(), "inconsistent": answers[1].content.strip()}
