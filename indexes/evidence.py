"""Evidence: a retrieved passage numbered [n] in the order a system first saw it, so that its
answers can cite it. It is a :class:`~claire.indexes.corpus.Passage` (prompt templates read its
title, section and content directly) that remembers the block it came from and its search score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claire.indexes.corpus import BlockElement, Passage
from claire.indexes.elements import element_rows

if TYPE_CHECKING:
    from claire.indexes.retriever import Hit


class Evidence(Passage):
    """A retrieved block numbered for citation; ``elements`` are its citable pieces, when it has them."""

    n: int
    block_id: str
    score: float | None = None
    elements: list[BlockElement] | None = None

    @classmethod
    def from_hit(cls, hit: "Hit", n: int) -> "Evidence":
        """The evidence [n] for one search hit."""
        block = hit.block
        return cls(n=n, block_id=block.id, document_title=block.document_title, section_title=block.section_title,
                   content=block.content, url=block.url, last_edit_date=block.last_edit_date, score=hit.score,
                   elements=block.elements)

    @property
    def rows(self) -> list[list[BlockElement]]:
        """The elements laid out in lines for a prompt (a table row's cells share a line)."""
        return element_rows(self.elements)  # type: ignore[return-value]

    def trace_view(self) -> dict[str, object]:
        """How a passage appears in a trace (WikiCollide's ``agent_trace`` passages plus our number and id)."""
        return {"n": self.n, "block_id": self.block_id, "document_title": self.document_title,
                "section_title": self.section_title, "content": self.content, "url": self.url}
