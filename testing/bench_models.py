"""The stand-ins CLAIRE's benchmarks run against the mock server: a tiny system that researches
in three sequential LLM calls, and deterministic responders playing the model (for the tiny
system, and for the real systems: search for the claim, then finish, then a score)."""

from __future__ import annotations

import json
import zlib
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from claire.domain import Assessment, Claim
from claire.llm.answers import text_of
from claire.llm.client import ChatClient
from claire.testing.doubles import first_step, kind_of

CALLS_PER_CLAIM = 3


class TinyAgent:
    """A System that researches in ``CALLS_PER_CLAIM`` sequential LLM calls and reads the last
    answer as its inconsistency score."""

    name = "bench"

    def __init__(self, client: ChatClient):
        self.client = client

    async def assess(self, claim: Claim) -> Assessment:
        """Three calls in one growing conversation; the last answer is the score."""
        messages: list[BaseMessage] = [HumanMessage(f"Is this consistent with the corpus? {claim.text}")]
        for step in range(CALLS_PER_CLAIM):
            answer = text_of(await self.client.ainvoke(messages))
            messages = [*messages, AIMessage(answer), HumanMessage(f"Step {step + 2}: continue.")]
        assessment = Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=float(answer),
                                threshold=0.5)
        assessment.decide()
        return assessment


def agent_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A model for the real systems: search for the claim, then finish; verify with a score. The
    call's purpose is the prompt the client names (``X-Claire-Prompt``, see ``testing.mock_openai``)."""
    if kind_of(body) == "controller":
        prompt = body["messages"][-1]["content"]
        first = first_step(prompt)  # the controller prompt shows no earlier step
        fact = prompt.split("<fact>", 1)[-1].split("</fact>", 1)[0]
        if not body.get("tools"):  # text actions
            return {"content": f"search({json.dumps(fact)})" if first else "finish()"}
        if first:
            return {"tool_calls": [{"name": "search", "arguments": {"query": fact}}]}
        return {"tool_calls": [{"name": "finish", "arguments": {}}]}
    score = score_answer(body)["content"]
    return {"content": f"<analysis>bench</analysis><inconsistency_score>{score}</inconsistency_score>"}


def score_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A deterministic 'score' in [0, 1] from the request, so runs are reproducible."""
    return {"content": f"{zlib.crc32(json.dumps(body['messages']).encode()) % 1000 / 1000:.3f}"}


RESEARCH_STEPS = 5
"""Searches the researching model makes before it finishes (a real model's CLAIRE run takes several)."""


def _claim_score(fact: str) -> float:
    """A score the cost benchmark's model gives a fact: high for the planted contradictions (a fact
    ending in "(planted)"), low otherwise, with a fixed spread per fact."""
    spread = zlib.crc32(fact.encode()) % 1000 / 1000
    return round(0.55 + 0.4 * spread if fact.rstrip(".").endswith("(planted)") else 0.45 * spread, 3)


def research_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A model that researches like a real one for the cascade's cost benchmark: the controller
    searches ``RESEARCH_STEPS`` times with different queries, then finishes; a verifier (CLAIRE's
    or retrieve-and-verify's) scores the fact by :func:`_claim_score`."""
    prompt = body["messages"][-1]["content"]
    fact = prompt.split("<fact>", 1)[-1].split("</fact>", 1)[0] if "<fact>" in prompt else ""
    if kind_of(body) == "controller":
        done = prompt.count("Step ")
        if done >= RESEARCH_STEPS:
            return {"tool_calls": [{"name": "finish", "arguments": {}}]}
        return {"tool_calls": [{"name": "search", "arguments": {"query": f"{fact} angle {done + 1}"}}]}
    asked = next((m["content"] for m in body["messages"] if "<fact>" in (m.get("content") or "")), prompt)
    fact = asked.split("<fact>", 1)[-1].split("</fact>", 1)[0]
    return {"content": f"<analysis>[1] compared.</analysis><inconsistency_score>{_claim_score(fact)}</inconsistency_score>"}


def patrol_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A model for the patrol's benchmark: every sentence of an extraction request is a fact; the
    controller searches once and finishes; the verifier flags a fact that says 1890."""
    kind = kind_of(body)
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    if kind == "extract":
        text = user.split("<passage>", 1)[-1].split("</passage>", 1)[0] if "<passage>" in user else user
        sentences = [s.strip().rstrip(".") for s in text.replace("\n", " ").split(". ") if len(s.split()) >= 4]
        return {"content": "\n".join(f"<fact>{s}.</fact>" for s in sentences)}
    if kind == "verifier":
        fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
        score = 0.9 if "1890" in fact else 0.1
        return {"content": f"<analysis>[1] compared.</analysis><inconsistency_score>{score}</inconsistency_score>"}
    return agent_answer(body)
