"""The explain tool: background on a term from the LLM's own knowledge, with no retrieval."""

from __future__ import annotations

from claire.prompts import PromptLibrary
from claire.tools.rankgpt import ChatModel


async def explain(topic: str, *, claim: str, llm: ChatModel, prompts: PromptLibrary) -> str:
    response = await llm.chat(prompts.render("explain", topic=topic, claim=claim))
    return response.content.strip()
