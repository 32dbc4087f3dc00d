"""The ``search`` tool: passages from Wikipedia outside the fact's own article, numbered for
citation in the order the research first met them."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.domain import Evidence
from claire.tools.context import ToolContext
from claire.tools.results import step_result

@tool(parse_docstring=True)
async def search(query: str, runtime: ToolRuntime[ToolContext, Any]) -> Command:
    """Search Wikipedia outside the fact's own article. Returns numbered passages.

    Args:
        query: what to look for, e.g. a name with a date or a number from the fact
    """
    context, state = runtime.context, runtime.state
    hits = await context.search.search(query, exclude_title=state.claim.context.document_title or None,
                                       k=context.docs_per_query)
    if not hits:
        return step_result(runtime, "search", query, "No passages found for this query. Try other words or another angle.", [])
    known = {evidence.block_id: evidence for evidence in state.evidence}
    lines, passages, found = [], [], []
    for hit in hits:
        evidence = known.get(hit.block.id)
        if evidence is None:
            evidence = known[hit.block.id] = Evidence.from_hit(hit, len(known) + 1)
            found.append(evidence)
            text = " ".join(hit.block.content.split())
            if context.snippet_chars and len(text) > context.snippet_chars:  # agent.snippet_chars; the verifier reads it whole
                text = text[: context.snippet_chars] + "…"
            lines.append(f"[{evidence.n}] {hit.block.document_title} > {hit.block.section_title}: {text}")
        else:
            lines.append(f"[{evidence.n}] (seen before) {hit.block.document_title} > {hit.block.section_title}")
        passages.append(evidence.trace_view())
    return step_result(runtime, "search", query, "\n".join(lines), passages, evidence=found)
