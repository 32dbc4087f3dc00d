"""The clarify_entity tool: retrieve blocks about similarly named entities, then let the LLM
write a short note telling them apart."""

from __future__ import annotations

from claire.indexes.retriever import Hit
from claire.prompts import PromptLibrary
from claire.tools.rankgpt import ChatModel
from claire.tools.search import SearchTool


async def clarify_entity(
    entity: str, *, claim: str, search: SearchTool, llm: ChatModel, prompts: PromptLibrary, k: int = 10,
    exclude_title: str | None = None,
) -> tuple[str, list[Hit]]:
    """Return the disambiguation note and the blocks it was written from.

    Like every search of the agent it leaves out the claim's own article, so the note cannot
    carry that article's version of the facts into the verdict.
    """
    hits = await search.search(entity, exclude_title=exclude_title, k=k)
    documents = [
        {"n": i, "document_title": h.block.document_title, "section_title": h.block.section_title, "content": h.block.content}
        for i, h in enumerate(hits, start=1)
    ]
    messages = prompts.render("clarify_entity", entity=entity, claim=claim, documents=documents)
    # Long passages could overflow a small model's window: leave out the least relevant (the last).
    count, budget = getattr(llm, "count_tokens", None), getattr(llm, "prompt_budget", None)
    while count is not None and budget is not None and len(documents) > 1 and count(messages) > budget():
        documents.pop()
        messages = prompts.render("clarify_entity", entity=entity, claim=claim, documents=documents)
    response = await llm.chat(messages)
    return response.content.strip(), hits
