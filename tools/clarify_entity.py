"""The ``clarify_entity`` tool: passages about similarly named entities, and a short note from the
LLM telling them apart."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.domain import Evidence
from claire.llm.answers import text_of
from claire.prompts.budget import fit_documents
from claire.tools.context import ToolContext
from claire.tools.results import step_result


@tool(parse_docstring=True)
async def clarify_entity(name_and_description: str, runtime: ToolRuntime[ToolContext, Any]) -> Command:
    """Get a report that tells apart similarly named entities (a person, an organisation, an event...), e.g. a named sports event, to separate events of similar names or the same event in other years.

    Args:
        name_and_description: the entity's name with a few words saying which one is meant
    """
    context, claim = runtime.context, runtime.state.claim
    # Like every search of the agent it leaves out the claim's own article, so the note cannot
    # carry that article's version of the facts into the verdict.
    hits = await context.search.search(name_and_description, exclude_title=claim.context.document_title or None,
                                       k=context.clarify_k, language=claim.context.language)
    documents = [Evidence.from_hit(hit, n) for n, hit in enumerate(hits, start=1)]

    def render(shown: list[Evidence]) -> Any:
        return context.prompts.render("clarify_entity", entity=name_and_description, claim=claim.text,
                                      context=claim.context, documents=shown)

    # Long passages could overflow a small model's window: the one fitting rule of every judging prompt.
    _, prompt, _ = fit_documents(render, documents, claim=name_and_description, count=context.llm.count_tokens,
                                 budget=context.llm.prompt_budget(), prompt="clarify_entity")
    note = text_of(await context.llm.ainvoke(prompt)).strip()
    return step_result(runtime, "clarify_entity", name_and_description, note,
                       clarifications=[{"entity": name_and_description, "text": note}])
