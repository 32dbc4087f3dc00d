"""What a new user meets (issue 44): every template's answer format whole in ``claire prompts
list``, one meaning per exit status, a failed fact never painted as fine, words that agree with
the verdict. The page itself is driven in tests/integration/test_web_browser.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from claire.errors import ClaireError, ExitCode, NothingToCheck
from claire.prompts import BUILTIN_DIR, PromptLibrary

STATIC = Path(__file__).parents[2] / "web"


@pytest.mark.parametrize("name", sorted(p.stem for p in BUILTIN_DIR.glob("*.j2") if not p.name.startswith("_")))
def test_a_templates_answer_format_is_listed_whole(name):
    output = PromptLibrary().info(name).output
    assert output and "\n" not in output
    assert not output.endswith((" a", " a last", " the", " sentence", "..."))  # never cut mid-sentence


def test_the_controller_and_verifier_formats_name_what_is_parsed():
    library = PromptLibrary()
    assert "`name(argument)`" in library.info("controller").output and library.info("controller").output.endswith("?\").")
    assert "<inconsistency_score>" in library.info("verifier").output
    assert "<source>" in library.info("fact_extraction").output and library.info("fact_extraction").output.endswith("parsed.")


def test_one_meaning_per_exit_status():
    assert (ExitCode.OK, ExitCode.FLAGGED, ExitCode.ERROR, ExitCode.NOTHING_TO_CHECK) == (0, 1, 2, 3)
    assert ClaireError.exit_code == ExitCode.ERROR and NothingToCheck("x").exit_code == ExitCode.NOTHING_TO_CHECK


def test_the_page_colours_a_sentence_by_what_its_facts_support():
    panel = (STATIC / "extension" / "panel.js").read_text()
    app = (STATIC / "static" / "app.js").read_text()
    assert "function groupBand(facts)" in panel and "ClairePanel.groupBand(group.facts)" in app
    # failed or unchecked wins over consistent: the rule is checked in the real browser too
    rule = panel.split("function groupBand(facts)", 1)[1].split("\n  }\n", 1)[0]
    assert rule.index('"error"') < rule.index("band(strongest(facts))")


def test_the_oracle_extracts_the_shipped_passages_facts_for_a_keyless_tour():
    """The oracle knows the tour's facts: extraction of docs/examples/Paris.txt gives them, with the
    sentence each comes from, and only the planted 1890 is scored inconsistent (issue 42, item 5)."""
    from claire.testing.oracle import oracle_responder

    passage = (STATIC.parent / "docs" / "examples" / "Paris.txt").read_text()
    prompt = PromptLibrary().render("fact_extraction", title="Paris", section="", text=passage)
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


def test_a_system_of_ones_own_is_named_package_module_class_and_bad_names_are_one_clear_error(tmp_path, monkeypatch):
    """issue 41: --system package.module:Class loads a system written outside CLAIRE, checked for
    what a system declares; the configuration accepts the name without loading it."""
    from claire.agent.registry import score_kind, system_class
    from claire.config import load_config
    from claire.errors import ConfigError

    (tmp_path / "my_systems.py").write_text(
        "class Counting:\n    name = 'counting'\n    score_kind = 'count'\n"
        "    @classmethod\n    def from_config(cls, parts):\n        return cls()\n"
        "    async def assess(self, claim):\n        raise NotImplementedError\n"
        "class NotASystem:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert system_class("my_systems:Counting").name == "counting" and score_kind("my_systems:Counting") == "count"
    assert load_config(None, {"agent.system": "my_systems:Counting"}).agent.system == "my_systems:Counting"
    for name, problem in (("my_systems:Missing", "has no Missing"), ("my_systems:NotASystem", "not a CLAIRE system"),
                          ("nowhere.at_all:Thing", "cannot import nowhere.at_all"), ("not a name", "unknown system")):
        with pytest.raises(ConfigError, match=problem):
            system_class(name)


def test_a_system_an_installed_package_names_is_found_by_that_name(tmp_path, monkeypatch):
    """A researcher's package registers its system in the claire.systems entry-point group and it
    is named like a built-in one (issue 41); a built-in name cannot be taken over."""
    from claire.agent.registry import installed_systems, system_class
    from claire.config import load_config
    from claire.errors import ConfigError
    from claire.testing.doubles import installed_package

    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    site = installed_package(tmp_path / "site", "claire_numbers",
                             {"numbers": "number_check:NumberCheck", "claire": "number_check:NumberCheck"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(examples))
    found = installed_systems()
    assert found["numbers"] == "number_check:NumberCheck" and "claire" not in found
    assert system_class("numbers").name == "number_check"
    assert system_class("claire").name == "claire"
    assert load_config(None, {"agent.system": "numbers"}).agent.system == "numbers"
    with pytest.raises(ConfigError, match="the installed .*numbers"):
        load_config(None, {"agent.system": "nonesuch"})
