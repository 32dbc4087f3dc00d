"""The worklist's parts: the conflict as the model names it, a case built from it (never from word
overlap when the model gave values), flags grouped into one contradiction from either end, entries
scored against a key, and the wikitable kept from acting as markup whatever the articles say."""

from __future__ import annotations

import mwparserfromhell
import pytest

from claire.domain import Assessment, Claim, Evidence, Passage, Reference
from claire.errors import DatasetError
from claire.resolving.cases import Conflict, case_from_check, name_conflict, read_conflict
from claire.resolving.flags import contradiction_key, same_contradictions
from claire.resolving.resolver import Resolver, same_subject
from claire.resolving.worklist import (
    EntryFact, PlantedPair, WorklistEntry, load_key, ranked, score_worklist, worklist_wikitext,
)
from claire.tasks.sides.records import OtherPassage, SideReport, SidesCase

HUBBLE = Evidence(n=2, id="hubble-optics", document_title="Hubble Space Telescope", section_title="Optics",
                  content="Hubble is a reflecting telescope. Its primary mirror is 2.4 metres across. It was fixed in 1993.",
                  citations=[Reference(url="https://science.example.net/telescopes/hubble")])
DECOY = Evidence(n=1, id="liberty", document_title="Statue of Liberty", section_title="Design",
                 content="The main copper skin of the statue is about 2.4 millimetres thick across its surface.")
CLAIM = Claim(claim_id="c", text="The main mirror of the Hubble Space Telescope is 2.4 feet across.",
              context=Passage(document_title="Edwin Hubble", section_title="Legacy", id="edwin-hubble-legacy",
                              content="A crater is named after him. Its main mirror measures 2.4 feet across.", citations=[]))
FLAGGED = Assessment(claim_id="c", system="claire", claim_text=CLAIM.text, score=0.9, threshold=0.5,
                     evidence=[DECOY, HUBBLE], reasoning="[2] gives metres.")


def test_the_conflict_is_read_from_the_answer():
    assert read_conflict("<conflicting_document>[2]</conflicting_document><fact_value>2.4 feet</fact_value>"
                         "<document_value> 2.4  metres </document_value>") == Conflict(2, "2.4 feet", "2.4 metres")
    assert read_conflict("<conflicting_document>none</conflicting_document><fact_value></fact_value>") is False
    assert read_conflict("the second one") is None
    assert read_conflict("<conflicting_document>2</conflicting_document><fact_value>none</fact_value>"
                         "<document_value>x</document_value>") is None


async def test_the_conflict_is_named_by_the_model_and_must_be_a_passage_read():
    from claire.prompts import PromptLibrary
    from claire.testing.scripted import scripted_client

    answers = iter(["<conflicting_document>2</conflicting_document><fact_value>2.4 feet</fact_value>"
                    "<document_value>2.4 metres</document_value>",
                    "<conflicting_document>9</conflicting_document><fact_value>a</fact_value><document_value>b</document_value>"])
    llm = scripted_client(lambda request: next(answers))
    assert await name_conflict(CLAIM, FLAGGED, llm, PromptLibrary()) == Conflict(2, "2.4 feet", "2.4 metres")
    assert await name_conflict(CLAIM, FLAGGED, llm, PromptLibrary()) is None  # [9] was never read


def test_a_case_takes_the_passage_and_values_the_model_named():
    case = case_from_check(CLAIM, FLAGGED, retriever=None, conflict=Conflict(2, "2.4 feet", "2.4 metres"))
    assert case.passage.block_id == "hubble-optics" and case.passage.text == "Its primary mirror is 2.4 metres across."
    assert case.values == ("2.4 feet", "2.4 metres") and case.values_from == "model"
    assert case.fact.sentence == "Its main mirror measures 2.4 feet across." and case.fact.block_id == "edwin-hubble-legacy"
    assert case.fact.citations == []  # the claim's passage says what it cites: nothing, so no index block is asked
    fallback = case_from_check(CLAIM, FLAGGED, retriever=None)
    assert fallback.values is None and fallback.values_from == "word overlap"


def test_agreement_counts_passages_about_the_same_thing_only():
    case = SidesCase.model_validate({"id": "t", "fact": {"text": "John Williams composed the music of Titanic.",
                                                         "document_title": "John Williams"},
                                     "passage": {"text": "James Horner wrote the score of Titanic.",
                                                 "document_title": "Titanic (1997 film)"}})
    values = ("John Williams", "James Horner")
    guitarist = OtherPassage(document_title="John Williams (guitarist)", content="John Williams plays music, not Titanic scores.")
    unrelated = OtherPassage(document_title="Star Wars", content="John Williams wrote the score.")
    related = OtherPassage(document_title="Celine Dion", content="Her Titanic song used music by James Horner.")
    assert not same_subject(guitarist, case.fact.text, values, case)
    assert not same_subject(unrelated, case.fact.text, values, case)
    assert same_subject(related, case.fact.text, values, case)
    assert Resolver.agreeing("James Horner", "John Williams", [guitarist, unrelated, related],
                             about=case.fact.text, sides=case) == ["the article Celine Dion (no source cited)"]


def _case(fact_block: str, passage_block: str, values: tuple[str, str] | None) -> SidesCase:
    return SidesCase.model_validate({"id": fact_block, "values": values, "values_from": "model" if values else "word overlap",
                                     "fact": {"text": "f", "document_title": fact_block.split("-")[0], "block_id": fact_block},
                                     "passage": {"text": "p", "document_title": passage_block.split("-")[0],
                                                 "block_id": passage_block}})


def test_one_contradiction_from_either_end_or_several_passages_is_one_group():
    cases = [_case("paris-1", "eiffel-2", ("1890", "1889")),
             _case("eiffel-2", "paris-1", ("1889", "1890")),    # the same pair from the other end
             _case("paris-1", "gustave-3", ("1890", "1889")),   # the same error against another passage
             _case("paris-1", "louvre-4", ("royal palace", "museum")),  # another contradiction of the same block
             None]
    assert contradiction_key(cases[0]) == contradiction_key(cases[1])
    assert sorted(map(sorted, same_contradictions(cases))) == [[0, 1, 2], [3]]


def _entry(entry_id: str, blocks: tuple[str, str], decision: str = "passage", should_change: str | None = "A",
           confidence: float = 0.7) -> WorklistEntry:
    sides = [SideReport(side="fact", text="x", document_title="A", block_id=blocks[0]),
             SideReport(side="passage", text="y", document_title="B", block_id=blocks[1])]
    return WorklistEntry(claim_id=entry_id, id=entry_id, decision=decision, confidence=confidence, should_change=should_change, sides=sides,
                         facts=[EntryFact(claim_id=entry_id, text="x")])


def test_a_worklist_is_ranked_and_scored_against_its_key(tmp_path):
    key = [PlantedPair(id="p1", wrong_block="a1", contradicting_blocks=["b1", "b2"]),
           PlantedPair(id="p2", wrong_block="a2", contradicting_blocks=["b3"]),
           PlantedPair(id="p3", wrong_block="a3", contradicting_blocks=["b4"], right_side="both")]
    entries = [_entry("e1", ("a1", "b1")), _entry("e2", ("a1", "b2")), _entry("e3", ("a2", "b3"), should_change="B"),
               _entry("e4", ("x", "y"), decision="unknown", should_change=None)]
    scores = score_worklist(entries, key)
    assert (scores["found"], scores["not_planted"], scores["duplicates"], scores["right_side"]) == (2, 1, 1, 1)
    assert scores["missed"] == ["p3"] and scores["precision"] == 0.75
    assert [e.id for e in ranked([entries[3], _entry("e5", ("c", "d"), confidence=0.9), entries[0]])] == ["e5", "e1", "e4"]
    bad = tmp_path / "key.jsonl"
    bad.write_text('{"id": "p", "wrong_block": "a", "contradicting_blocks": []}\n')
    with pytest.raises(DatasetError, match="key.jsonl:1: field contradicting_blocks"):
        load_key(bad)


def test_the_wikitable_never_acts_as_markup():
    hostile = "[[Category:Spam]] {{delete}} | ~~~~ \n== heading =="
    entry = _entry("e1", ("a1", "b1"))
    entry.sides[0] = entry.sides[0].model_copy(update={"document_title": "Category:Spam", "section_title": "x|y]]",
                                                       "sentence": hostile})
    entry.sides[1] = entry.sides[1].model_copy(update={"document_title": "File:Evil.png", "text": hostile})
    text = worklist_wikitext([entry])
    code = mwparserfromhell.parse(text)
    assert not code.filter_templates() and "~~~~" not in text.replace("<nowiki>", "").split("</nowiki>")[-1]
    assert {str(link.title) for link in code.filter_wikilinks()} == {":Category:Spam#xy", ":File:Evil.png"}
    assert len(code.filter_headings()) == 1  # the table's own heading, none from the text
