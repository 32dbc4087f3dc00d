"""The oracle extracts the shipped passages' facts, so the keyless tour runs end to end."""

from __future__ import annotations

from pathlib import Path


from claire.prompts import PromptLibrary

STATIC = Path(__file__).parents[2] / "web"


def test_the_oracle_extracts_the_shipped_passages_facts_for_a_keyless_tour():
    """The oracle knows the tour's facts: extraction of docs/examples/Paris.txt gives them, with the
    sentence each comes from, and only the planted 1890 is scored inconsistent."""
    from claire.testing.oracle import oracle_responder

    passage = (STATIC.parent / "docs" / "examples" / "Paris.txt").read_text()
    prompt = PromptLibrary().render("fact_extraction", title="Paris", section="", text=passage, language="")
    wire = [{"role": "system" if m.type == "system" else "user", "content": m.content} for m in prompt]
    respond = oracle_responder()
    answer = respond({"messages": wire})["content"]
    facts = [line[len("<fact>"):-len("</fact>")] for line in answer.splitlines() if line.startswith("<fact>")]
    assert "The Eiffel Tower was completed in 1890." in facts and "Paris is the capital of France." in facts
    assert answer.count("<source>") == len(facts) == 9

    def verdict(fact: str) -> str:
        asked = PromptLibrary().render("verifier", claim=fact, context={"document_title": "Paris", "section_title": "",
                                                                        "content": ""},
                                       clarifications=[], explanations=[], documents=[])
        body = {"messages": [{"role": "system" if m.type == "system" else "user", "content": m.content} for m in asked]}
        return respond(body)["content"]

    assert "<inconsistency_score>0.9<" in verdict("The Eiffel Tower was completed in 1890.")
    assert "<inconsistency_score>0.1<" in verdict("The Louvre was once a royal palace.")


def test_an_infobox_is_a_fact_a_line_for_the_oracle():
    from claire.testing.oracle import extracted_facts

    infobox = "Type: Lattice tower\nLocation: Champ de Mars, Paris\nInaugurated: 31 March 1889"
    assert [fact for fact, _ in extracted_facts(infobox, [])] == infobox.splitlines()
    wrapped = "The tower was built for\nthe world's fair. It is tall."  # a sentence wrapped over two lines stays whole
    assert [fact for fact, _ in extracted_facts(wrapped, [])] == ["The tower was built for the world's fair.", "It is tall."]
