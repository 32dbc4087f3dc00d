"""Every template's answer format is shown whole by ``claire prompts show``, and the controller's
and verifier's formats name what the code parses."""

from __future__ import annotations

import pytest

from claire.prompts import BUILTIN_DIR, PromptLibrary


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
