"""The WikiCollide verifier: one LLM call over the claim, its context, the clarifications and all
gathered passages, read as an inconsistency score in [0, 1] (asked once more when unreadable)."""

from __future__ import annotations

from typing import Sequence

from claire.domain import Claim, Evidence
from claire.llm.answers import tagged_score
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.prompts.answers import Answer
from claire.tasks.base import Judgement, judging_prompt

SCORE_TAG = "inconsistency_score"


def read_score(answer: str | Answer) -> float | None:
    """The inconsistency score of an answer: the typed answer's, else the last usable
    ``<inconsistency_score>`` of its text; None when there is none."""
    if isinstance(answer, Answer):
        return getattr(answer, SCORE_TAG, None)
    return tagged_score(answer, SCORE_TAG)


async def judge_score(claim: Claim, documents: Sequence[Evidence], clarifications: list[dict[str, str]],
                      llm: ChatClient, prompts: PromptLibrary, *, explanations: Sequence[dict[str, str]] = ()) -> Judgement:
    """Ask for the score; a missing or malformed score is asked for once more, then an error."""
    prompt, fit = judging_prompt("verifier", claim, documents, clarifications, llm, prompts, explanations=explanations)
    refits = []

    def refit(reserve: int) -> list:
        smaller, note = judging_prompt("verifier", claim, documents, clarifications, llm, prompts,
                                       explanations=explanations, reserve=reserve)
        refits.append(note)
        return smaller

    asked = await llm.ask(prompt, read_score, refit=refit,
                          follow_up=lambda problem, detail="": prompts.render("follow_up", wanted=SCORE_TAG, problem=problem, detail=detail))
    return Judgement(
        score=asked.value,
        restated_claim=asked.field("restated_claim"),
        analysis=asked.field("analysis") or asked.text.strip(),
        raw=asked.text,
        error=asked.failure("the verifier", SCORE_TAG),
        fit=refits[-1] if refits else fit,
    )
