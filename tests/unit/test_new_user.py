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
    assert library.info("controller").output.endswith('or finish().')
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
