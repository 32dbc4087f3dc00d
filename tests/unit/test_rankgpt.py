"""RankGPT reranking: lenient parsing, the sliding window, and reranking through the LLM layer."""

from __future__ import annotations

import re

from claire.domain import Block
from claire.indexes.retriever import Hit
from claire.prompts import library
from claire.indexes.rankgpt import RankGPTReranker, parse_ranking, window_starts
from claire.indexes.search_engine import SearchEngine as SearchTool
from claire.testing.doubles import KeywordRetriever
from claire.testing.scripted import scripted_client


def test_parse_ranking_is_always_a_complete_permutation():
    assert parse_ranking("[2] > [1] > [3]", 3) == [1, 0, 2]
    assert parse_ranking("[3] > [3] > [9] > [0] > [1]", 4) == [2, 0, 1, 3]  # dupes and out-of-range dropped, rest appended
    assert parse_ranking("I cannot rank these.", 3) == [0, 1, 2]
    assert parse_ranking("2, 1", 2) == [1, 0]


def test_windows_move_from_tail_to_head():
    assert window_starts(10, 20, 10) == [0]
    assert window_starts(40, 20, 10) == [20, 10, 0]
    assert window_starts(35, 20, 10) == [15, 5, 0]


def hits(n: int) -> list[Hit]:
    return [Hit(block=Block(id=f"b{i}", document_title=f"Doc {i}", content=f"passage {i} " + "word " * 300), score=1.0, rank=i + 1)
            for i in range(n)]


async def test_sliding_window_rerank_brings_the_best_to_the_top():
    # the model always prefers the passage with the highest document number it is shown
    def prefer_high(request):
        numbers = re.findall(r'<passage n="(\d+)" title="Doc (\d+)"', request.messages[1].content)
        ordered = sorted(numbers, key=lambda pair: -int(pair[1]))
        return " > ".join(f"[{n}]" for n, _ in ordered)

    llm = scripted_client(prefer_high)
    reranker = RankGPTReranker(llm, library(), window=20, step=10, max_chars=100)
    ranked = await reranker.rerank("query", hits(40))
    assert [h.block.id for h in ranked[:10]] == [f"b{i}" for i in range(39, 29, -1)]
    assert sorted(h.block.id for h in ranked) == sorted(h.block.id for h in hits(40))
    assert len(llm.model.requests) == 3
    prompt = llm.model.requests[0].messages[1].content
    assert '<passage n="20" title="Doc 39"' in prompt and "word word" in prompt
    assert len(prompt) < 20 * 200 + 500  # passages truncated


async def test_search_tool_reranks_a_deeper_pool_and_returns_k():
    retriever = KeywordRetriever()
    llm = scripted_client(lambda request: "[3] > [2] > [1]")
    tool = SearchTool(retriever, reranker=RankGPTReranker(llm, library()), candidates=50)
    found = await tool.search("Eiffel Tower Paris 1889", exclude_title="Paris", k=2)
    pool = KeywordRetriever().search("Eiffel Tower Paris 1889", exclude_title="Paris", k=4)
    # the model's order "[3] > [2] > [1]" over the pool of 4, cut to k = 2
    assert [h.block.id for h in found] == [pool[2].block.id, pool[1].block.id] and [h.rank for h in found] == [1, 2]
    assert retriever.queries[-1] == ("Eiffel Tower Paris 1889", "Paris", 4)  # a pool twice as deep
    assert all(h.block.document_title != "Paris" for h in found)
