"""Fact extraction with a scripted model: messy output, duplicates, empty input, long texts."""

from __future__ import annotations

import pytest

from claire.agent.extraction import extract_facts, parse_facts, split_blocks
from claire.errors import ConfigError
from claire.prompts import library
from claire.testing.scripted import scripted_client


def test_parse_facts_from_tags_and_messy_output():
    text = """Here are the facts:
<fact>The Eiffel Tower is in Paris.</fact>
<FACT> The Eiffel Tower was completed in 1889. </FACT>
<fact>the eiffel tower is in paris</fact>
<fact>Short.</fact>
<fact>Gustave Eiffel's company built the tower"""
    assert parse_facts(text) == [
        "The Eiffel Tower is in Paris.",
        "The Eiffel Tower was completed in 1889.",
        "Gustave Eiffel's company built the tower",
    ]


def test_parse_facts_falls_back_to_list_lines_and_handles_empty():
    assert parse_facts("1. Paris is the capital of France.\n- The Seine flows through Paris.") == [
        "Paris is the capital of France.", "The Seine flows through Paris."]
    assert parse_facts("") == [] and parse_facts("I could not find any facts.") == []


def test_split_blocks_bounds_length():
    paragraph = " ".join(f"Sentence number {i} is here." for i in range(80))
    blocks = split_blocks(paragraph + "\n\nA second short paragraph.", max_words=60)
    assert all(len(b.split()) <= 60 for b in blocks)
    assert blocks[-1].endswith("A second short paragraph.")


async def test_extract_concurrently_and_deduplicate_across_blocks():
    def answer(request):
        text = request.messages[1].content
        return "<fact>The Eiffel Tower is in Paris.</fact>" + ("<fact>The tower opened in 1889 to the public.</fact>" if "1889" in text else "")

    llm = scripted_client(answer)
    facts = await extract_facts(title="Eiffel Tower", text="It is in Paris.\n\nIt opened in 1889.", llm=llm,
                                prompts=library(), max_words=5)
    assert [f.text for f in facts] == ["The Eiffel Tower is in Paris.", "The tower opened in 1889 to the public."]
    assert facts[1].block == "It opened in 1889."
    assert len(llm.model.requests) == 2


async def test_empty_text_is_a_clear_error():
    with pytest.raises(ConfigError, match="text is empty"):
        await extract_facts(title="X", text="  \n", llm=scripted_client([]), prompts=library())
