"""Fact extraction with a scripted model: messy output, duplicates, empty input, long texts."""

from __future__ import annotations

import pytest

from claire.agent.extraction import extract_facts, parse_sourced_facts, split_blocks


def parse_facts(text):
    return [fact for fact, _ in parse_sourced_facts(text)]
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


def test_parse_sourced_facts_pairs_each_fact_with_its_source_sentence():
    text = ("<fact>Compaq released the Compaq Portable in 1982.</fact><source>Soon after, it released the Portable.</source>\n"
            "<fact>Compaq made computers for offices<source>Compaq made office computers.</source>\n"
            "<fact>Compaq was founded in 1982.</fact>")
    assert parse_sourced_facts(text) == [
        ("Compaq released the Compaq Portable in 1982.", "Soon after, it released the Portable."),
        ("Compaq made computers for offices", "Compaq made office computers."),
        ("Compaq was founded in 1982.", None),
    ]
    assert parse_facts(text)[0] == "Compaq released the Compaq Portable in 1982."


async def test_headings_are_section_titles_not_text():
    def answer(request):
        text = request.messages[1].content
        assert "##" not in text and "==" not in text  # a heading never reaches the model as text
        passage = text.split("<passage>", 1)[1]
        return "".join(f"<fact>{line.strip()}</fact>" for line in passage.splitlines() if line.strip().endswith("."))

    llm = scripted_client(answer)
    facts = await extract_facts(title="Paris", text="Paris is in France.\n## Landmarks\nThe tower is in Paris.\n\n"
                                "== Overview ==\nThe city has many bridges.", llm=llm, prompts=library(), max_words=5)
    assert [(f.text, f.section) for f in facts] == [("Paris is in France.", ""), ("The tower is in Paris.", "Landmarks"),
                                                    ("The city has many bridges.", "Overview")]
    assert "Paris > Landmarks" in llm.model.requests[1].messages[1].content
    with pytest.raises(ConfigError, match="only headings"):
        await extract_facts(title="X", text="## Landmarks\n== Overview ==", llm=scripted_client([]), prompts=library())
