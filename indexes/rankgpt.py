"""RankGPT listwise reranking through the LLM: a sliding window moved from the tail of the
candidate list to its head, each window ranked in one call, with lenient parsing so a
ranking is always a complete permutation.
"""

from __future__ import annotations

import re
from typing import Sequence

from claire.indexes.retriever import Hit
from claire.llm.answers import text_of
from claire.llm.client import ChatClient, parsed_of
from claire.prompts import PromptLibrary

_NUMBER = re.compile(r"\d+")


def parse_ranking(text: str, size: int) -> list[int]:
    """Read ``[2] > [1] > [3]`` (or any list of numbers) into 0-based positions.

    Duplicates and out-of-range numbers are dropped; numbers the model left out are appended in
    their original order, so the result is always a permutation of ``range(size)``.
    """
    order: list[int] = []
    seen: set[int] = set()
    for match in _NUMBER.finditer(text or ""):
        position = int(match.group()) - 1
        if 0 <= position < size and position not in seen:
            seen.add(position)
            order.append(position)
    order.extend(position for position in range(size) if position not in seen)
    return order


def window_starts(total: int, window: int, step: int) -> list[int]:
    """Start offsets of the windows, from the tail of the list to its head."""
    if total <= window:
        return [0]
    starts = list(range(total - window, -1, -step))
    if starts[-1] != 0:
        starts.append(0)
    return starts


class RankGPTReranker:
    """Reorders search hits by asking the LLM to rank them, one window at a time."""

    def __init__(self, llm: ChatClient, prompts: PromptLibrary, *, window: int = 20, step: int = 10, max_chars: int = 600):
        if step > window:
            raise ValueError("rerank step must not exceed the window")
        self.llm = llm
        self.prompts = prompts
        self.window = window
        self.step = step
        self.max_chars = max_chars

    async def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` reordered by relevance to ``query``."""
        ranked = list(hits)
        if len(ranked) < 2:
            return ranked
        for start in window_starts(len(ranked), self.window, self.step):
            chunk = ranked[start : start + self.window]
            prompt = self.prompts.render("rankgpt", query=query, passages=[hit.block for hit in chunk],
                                         max_chars=self.max_chars)
            answer = await self.llm.ainvoke(prompt)
            typed = parsed_of(answer)
            order = parse_ranking(" ".join(map(str, typed.order)) if typed is not None else text_of(answer), len(chunk))
            ranked[start : start + len(chunk)] = [chunk[i] for i in order]
        return ranked
