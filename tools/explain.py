"""The ``explain`` tool: background on a term from the LLM's own knowledge, with no retrieval."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.llm.answers import text_of
from claire.tools.context import ToolContext
from claire.tools.results import step_result


@tool(parse_docstring=True)
async def explain(topic: str, runtime: ToolRuntime[ToolContext, Any]) -> Command:
    """Get the basics of a term or concept from the model's own knowledge (no search), e.g. a technical term or the rules of a sport.

    Args:
        topic: the term or concept to explain
    """
    context = runtime.context
    claim = runtime.state.claim
    prompt = context.prompts.render("explain", topic=topic, claim=claim.text, context=claim.context)
    note = text_of(await context.llm.ainvoke(prompt)).strip()
    return step_result(runtime, "explain", topic, note, explanations=[{"topic": topic, "text": note}])
