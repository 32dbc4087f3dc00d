"""The ``search`` tool: passages from Wikipedia outside the fact's own article, numbered for
citation in the order the research first met them."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime, tool
from langgraph.types import Command

from claire.domain import Evidence
from claire.tools.context import ToolContext
from claire.tools.results import step_result

def passage_line(evidence: Evidence, *, seen: bool = False, snippet_chars: int = 0) -> str:
    """How a search shows one passage to the controller: ``[n] title > section: text``, the text cut
    to ``snippet_chars`` (agent.snippet_chars; 0 keeps it whole), or only its heading when the
    research met it before."""
    if seen:
        return f"[{evidence.n}] (seen before) {evidence.document_title} > {evidence.section_title}"
    text = " ".join(evidence.content.split())
    if snippet_chars and len(text) > snippet_chars:  # the verifier reads it whole
        text = text[:snippet_chars] + "…"
    return f"[{evidence.n}] {evidence.document_title} > {evidence.section_title}: {text}"


@tool(parse_docstring=True)
async def search(query: str, runtime: ToolRuntime[ToolContext, Any]) -> Command:
    """Explore Wikipedia outside the fact's own article. Returns numbered passages.

    Args:
        query: a question to look up, e.g. "When was the Eiffel Tower completed?"
    """
    context, state = runtime.context, runtime.state
    hits = await context.search.search(query, exclude_title=state.claim.context.document_title or None,
                                       k=context.docs_per_query, language=state.claim.context.language)
    if not hits:
        return step_result(runtime, "search", query, "No passages found for this query. Try other words or another angle.", [])
    known = {evidence.block_id: evidence for evidence in state.evidence}
    lines, passages, found = [], [], []
    for hit in hits:
        evidence = known.get(hit.block.id)
        seen = evidence is not None
        if evidence is None:
            evidence = known[hit.block.id] = Evidence.from_hit(hit, len(known) + 1)
            found.append(evidence)
        lines.append(passage_line(evidence, seen=seen, snippet_chars=context.snippet_chars))
        passages.append(evidence.trace_view())
    return step_result(runtime, "search", query, "\n".join(lines), passages, evidence=found)
