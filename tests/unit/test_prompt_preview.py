"""Prompt previews (``claire prompts``): every template filled from the built-in example or a real
record, by the configuration's variants or a chosen one, with clear errors for what does not exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claire.agent.prompt_preview import builtin_sample, record_sample, render_preview
from claire.config import load_config
from claire.errors import ConfigError
from claire.prompts import PromptError, PromptLibrary

FIXTURES = Path(__file__).parents[1] / "fixtures"
WIKICOLLIDE = FIXTURES / "wikicollide_mini.json"
WAFER = FIXTURES / "cite_wafer.jsonl"
PAPER = load_config(None, {})


def roles(preview) -> list[str]:
    return [message.type for message in preview.messages]


@pytest.mark.parametrize("preset", ["paper", "practical"])
def test_every_template_and_variant_renders_from_the_builtin_example(preset):
    config = load_config(None, {"preset": preset})
    library = PromptLibrary()
    for name in library.names():
        for variant in [None, "default", *library.variant_names(name)]:
            preview = render_preview(name, config, variant=variant, steps=2)
            assert preview.messages and preview.origin == "the built-in example", (name, variant)
            chosen = PromptLibrary(variants={name: preview.variant}) if preview.variant else library
            assert set(preview.inputs) <= set(chosen.info(name).inputs) | {"document"}
            if variant not in (None, "default"):
                assert preview.variant == variant and preview.path.name == f"{name}.{variant}.j2"


def test_the_preset_chooses_the_variant_unless_one_is_named():
    practical = load_config(None, {"preset": "practical"})
    assert render_preview("verifier", practical).path.name == "verifier.lenient.j2"
    assert render_preview("verifier", practical, variant="default").path.name == "verifier.j2"
    assert render_preview("verifier.strict", PAPER).variant == "strict"
    paper = render_preview("verifier", PAPER)
    assert paper.path.name == "verifier.j2" and roles(paper) == ["system", "human"]
    assert "0.2 to 0.4" in paper.messages[0].content and "<restated_claim>" in paper.output


def test_a_wikicollide_record_brings_its_passages_notes_and_steps():
    with open(WIKICOLLIDE, encoding="utf-8") as handle:
        record = json.load(handle)[0]
    claim_id = record["claim"]["claim_id"]
    sample = record_sample(f"{WIKICOLLIDE}:{claim_id}")
    assert sample.claim.text == record["claim"]["claim_text"] and sample.task == "wikicollide"
    searched = [p for step in record["agent_trace"] if step["action_name"].startswith("search")
                for p in step["action_output"]]
    assert {d.content for d in sample.documents} == {p["content"] for p in searched}
    assert [d.n for d in sample.documents] == list(range(1, len(sample.documents) + 1))
    preview = render_preview("verifier", PAPER, sample=sample)
    user = preview.messages[1].content
    assert record["claim"]["claim_text"] in user and sample.documents[0].content.split()[0] in user
    controller = render_preview("controller", PAPER, sample=sample, steps=1).messages[1].content
    assert "Step 1:" in controller and "Step 2:" not in controller


def test_a_citations_record_fills_the_citation_templates():
    sample = record_sample(f"{WAFER}:supported")
    preview = render_preview("cite_support", PAPER, sample=sample)
    user = preview.messages[1].content
    assert "27 May 1937" in user and 'Cited source: "Golden Gate Bridge: a short history"' in user
    assert sample.origin == "record supported of cite_wafer.jsonl (citations)"


def test_unknown_templates_variants_and_records_are_clear_errors(tmp_path):
    with pytest.raises(PromptError, match="no prompt template 'verifire'; the templates: cite_queries"):
        render_preview("verifire", PAPER)
    with pytest.raises(PromptError, match="template verifier has no variant 'sloppy'; its variants: feverous, lenient"):
        render_preview("verifier", PAPER, variant="sloppy")
    with pytest.raises(ConfigError, match="names the variant 'strict' and --variant asks for 'lenient'"):
        render_preview("verifier.strict", PAPER, variant="lenient")
    with pytest.raises(ConfigError, match="--record expects FILE:ID"):
        record_sample(str(WIKICOLLIDE))
    with pytest.raises(ConfigError, match="is not a file"):
        record_sample(f"{tmp_path / 'missing.json'}:1")
    with pytest.raises(ConfigError, match="no record with id 'nope' in .*its ids: demo_1"):
        record_sample(f"{WIKICOLLIDE}:nope")
    junk = tmp_path / "junk.json"
    junk.write_text("not json at all", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a WikiCollide, FEVEROUS or citations file"):
        record_sample(f"{junk}:1")


def test_a_feverous_record_renders_with_its_tasks_variants_and_says_what_it_lacks(tmp_path):
    path = tmp_path / "feverous.jsonl"
    path.write_text(json.dumps({"id": 7, "claim": "Lyon lies on the Rhône.", "label": "SUPPORTS",
                                "evidence": [{"content": ["Lyon_sentence_0"], "context": {}}]}) + "\n", encoding="utf-8")
    sample = record_sample(f"{path}:7")
    preview = render_preview("verifier", PAPER, sample=sample)
    assert preview.variant == "feverous" and "Lyon lies on the Rhône." in preview.messages[1].content
    assert "no passage text" in sample.notes[0]
    with pytest.raises(ConfigError, match="reads one retrieved passage"):
        render_preview("nli", PAPER, sample=sample, variant="default")


def test_the_builtin_example_is_the_projects_own():
    sample = builtin_sample()
    assert sample.claim.text == "The Eiffel Tower was completed in 1890." and len(sample.documents) == 3
    assert [step["action"] for step in sample.history] == ["search", "clarify_entity"]
