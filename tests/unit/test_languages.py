"""Language editions: codes and lists, an article named with its edition, sentences by a language's
rules, interlanguage links followed both ways, and a search across editions that looks at the
counterpart article first."""

from __future__ import annotations

import asyncio

import pytest

from claire.domain import Block
from claire.indexes.corpus import linked_both_ways
from claire.indexes.retriever import Hit
from claire.indexes.search_engine import SearchEngine
from claire.languages import edition_title, language_list, qualified, sentence_spans
from claire.resolving.cases import sentence_giving


def test_language_lists_and_qualified_titles():
    assert language_list("fr, de,fr") == ["fr", "de"]
    with pytest.raises(ValueError):
        language_list("french!")
    assert edition_title("de:Saturn V", "en") == ("de", "Saturn V")
    assert edition_title("Star Wars: Episode IV", "en") == ("en", "Star Wars: Episode IV")
    assert qualified("en", "Paris", "en") == "Paris" and qualified("fr", "Paris", "en") == "fr:Paris"


def test_a_german_ordinal_date_ends_no_sentence():
    text = "Mit dem Bau wurde 1887 begonnen. Der Turm wurde am 31. März 1890 eingeweiht, z. B. mit Flaggen."
    assert [text[a:b] for a, b in sentence_spans(text, "de")] == [
        "Mit dem Bau wurde 1887 begonnen.", "Der Turm wurde am 31. März 1890 eingeweiht, z. B. mit Flaggen."]
    assert sentence_giving(text, "1890", "eingeweiht 1890", "de").startswith("Der Turm wurde am 31. März 1890")


def _block(id_: str, title: str, language: str | None, links: dict | None = None) -> Block:
    return Block(id=id_, document_title=title, content=f"{title} text", language=language, counterparts=links)


def test_interlanguage_links_are_followed_both_ways():
    blocks = linked_both_ways([_block("e", "Eiffel Tower", None), _block("f", "Tour Eiffel", "fr", {"en": "Eiffel Tower"}),
                               _block("d", "Eiffelturm", "de", {"fr": "Tour Eiffel"})], "en")
    assert blocks[0].language == "en" and blocks[0].counterparts == {"fr": "Tour Eiffel", "de": "Eiffelturm"}
    assert blocks[2].counterparts == {"fr": "Tour Eiffel", "en": "Eiffel Tower"}


class _Index:
    def __init__(self, blocks):
        self.blocks = blocks

    def search(self, query, **options):
        found = [b for b in self.blocks if b.document_title != options.get("exclude_title")]
        return [Hit(block=b, score=1.0 / (n + 1), rank=n + 1) for n, b in enumerate(found)][: options["k"]]

    def document(self, title):
        return [b for b in self.blocks if b.document_title == title]


def test_a_search_across_editions_keeps_out_the_own_article_and_puts_the_counterpart_first():
    blocks = [_block("x", "Somewhere", "en"), _block("own", "Paris", "en", {"fr": "Paris"}),
              _block("es", "París", "es"), _block("fr", "Paris", "fr", {"en": "Paris"})]
    engine = SearchEngine(_Index(blocks), language="en", editions=("fr",))
    found = asyncio.run(engine.search("q", exclude_title="Paris", k=5))
    assert [h.block.id for h in found] == ["fr", "x"]  # the French counterpart first; no Spanish, not its own article
    alone = asyncio.run(SearchEngine(_Index(blocks), language="en").search("q", exclude_title="Paris", k=5))
    assert [h.block.id for h in alone] == ["x"]  # one edition unless others are asked for
