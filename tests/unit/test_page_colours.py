"""The web page colours a sentence by what its facts support."""

from __future__ import annotations

from pathlib import Path



STATIC = Path(__file__).parents[2] / "web"


def test_the_page_colours_a_sentence_by_what_its_facts_support():
    panel = (STATIC / "extension" / "panel.js").read_text()
    app = (STATIC / "static" / "app.js").read_text()
    assert "function groupBand(facts)" in panel and "ClairePanel.groupBand(group.facts)" in app
    # failed or unchecked wins over consistent: the rule is checked in the real browser too
    rule = panel.split("function groupBand(facts)", 1)[1].split("\n  }\n", 1)[0]
    assert rule.index('"error"') < rule.index("band(strongest(facts))")
