"""The clarify_entity tool: retrieve blocks about similarly named entities, then let the LLM
write a short note telling them apart."""

from __future__ import annotations

from claire.indexes.retriever import Hit
from claire.prompts import PromptLibrary
from claire.tools.rankgpt import ChatModel
from claire.tools.search import SearchTool


async def clarify_entity(
    entity: str, *, claim: str, search: SearchTool, llm: ChatModel, prompts: PromptLibrary, k: int = 10
) -> tuple[str, list[Hit]]:
    """Return the disambiguation note and the blocks it was written from.

    The search is not restricted to other articles: the entity's own article is the best
    source for telling it apart from its namesakes.
    """
    hits = await search.search(entity, exclude_title=None, k=k)
    documents = [
        {"n": i, "document_title": h.block.document_title, "section_title": h.block.section_title, "content": h.block.content}
        for i, h in enumerate(hits, start=1)
    ]
    response = await llm.chat(prompts.render("clarify_entity", entity=entity, claim=claim, documents=documents))
    return response.content.strip(), hits
