"""Placing extracted facts in the submitted text: the sentence the page highlights for each fact."""

from __future__ import annotations

from pathlib import Path

from claire.jobs.spans import locate, paragraphs, sentences

ROOT = Path(__file__).resolve().parents[2]


def marked(fact: str, text: str, **hints) -> str | None:
    span = locate(fact, text, **hints)
    return None if span is None else text[span[0]:span[1]]


COMPAQ = ("Soon after in 1982, Compaq released the very successful Compaq Portable. "
          "Compaq released the Compaq Portable in 1982.")


def test_an_exact_sentence_beats_an_earlier_one_holding_all_its_words():
    assert locate("Compaq released the Compaq Portable in 1982.", COMPAQ) == (73, 117)
    assert marked("Compaq released the Compaq Portable in 1982", COMPAQ) == "Compaq released the Compaq Portable in 1982."


def test_the_most_specific_sentence_holding_every_word_wins_over_a_longer_one():
    # a rewording: no sentence says it exactly, both hold its words, the shorter one is the one
    assert marked("In 1982 Compaq released the Compaq Portable.", COMPAQ) == "Compaq released the Compaq Portable in 1982."
    text = "The tower, built of iron by Eiffel's firm for the fair of 1889, stands in Paris. The tower is in Paris."
    assert marked("The tower stands in Paris.", text).startswith("The tower, built")  # only it holds "stands"


def test_a_fuzzy_match_when_no_sentence_holds_every_word():
    text = "Paris is the capital of France. It stands on the Champ de Mars and is made of wrought iron."
    assert marked("The Eiffel Tower is made of wrought iron.", text) == "It stands on the Champ de Mars and is made of wrought iron."
    assert locate("Tokyo hosted the 1964 Olympic Games.", text) is None  # too little in common: no span


def test_a_single_line_break_inside_a_paragraph_is_a_space():
    text = (ROOT / "docs" / "examples" / "Paris.txt").read_text()
    found = marked("The Eiffel Tower was completed in 1890.", text)
    assert found == ("The Eiffel Tower, the city's best-known landmark, was completed in 1890 for the world's fair held on\n"
                     "the Champ de Mars.")
    assert marked("The Louvre is the most visited art museum in the world.", text).startswith("The Louvre, once")


def test_headings_are_section_titles_never_part_of_a_sentence():
    text = "Intro sentence about Paris here.\n## Landmarks\nThe Eiffel Tower stands in Paris.\n\n== Overview ==\nIt is old."
    assert [text[s:e] for s, e in sentences(text)] == [
        "Intro sentence about Paris here.", "The Eiffel Tower stands in Paris.", "It is old."]
    assert marked("The Eiffel Tower stands in Paris.", text) == "The Eiffel Tower stands in Paris."
    assert locate("Landmarks", text) is None


def test_blank_lines_and_list_items_end_a_paragraph():
    text = "First paragraph has no stop\n\nSecond one here.\n- an item without a stop\n- another item"
    assert [text[s:e] for s, e in paragraphs(text)] == [
        "First paragraph has no stop", "Second one here.", "- an item without a stop", "- another item"]
    walk = "A walk of 1.5 km on example.org. Then more."
    assert [walk[s:e] for s, e in sentences(walk)] == ["A walk of 1.5 km on example.org.", "Then more."]


def test_repeated_sentences_are_found_where_the_fact_came_from():
    first = "The bridge opened in 1937. It is red."
    second = "Visitors cross it daily. The bridge opened in 1937."
    text = first + "\n\n" + second
    assert locate("The bridge opened in 1937.", text) == (0, 26)  # the first of two equal sentences
    span = locate("The bridge opened in 1937.", text, block=second)
    assert span == (len(first) + 2 + 25, len(text))  # the occurrence in its own block


def test_a_fact_rewritten_by_extraction_keeps_its_source_sentence():
    text = ("Gustave Eiffel's firm designed the tower. It was completed in 1889, in time for the fair. "
            "The tower was repainted in 1890.")
    # by its words alone the rewritten fact would land on the 1890 sentence (it shares "tower" and a year)
    fact = "The Eiffel Tower was completed in 1890."
    assert marked(fact, text) == "The tower was repainted in 1890."
    assert marked(fact, text, source="It was completed in 1889, in time for the fair.") == \
        "It was completed in 1889, in time for the fair."
    # the model's copy may differ in case, spacing and punctuation
    assert marked(fact, text, source="it was completed in 1889 in time for the fair") == \
        "It was completed in 1889, in time for the fair."
    # a source that is not in the text is ignored: the fact is located by its words
    assert marked(fact, text, source="A sentence the model made up.") == "The tower was repainted in 1890."
