"""The paper preset beside the paper: every rule of the paper's method is mapped to the line that
implements it, or listed as a difference; every addition is listed; the paper preset's settings
are the paper's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from claire.config import load_config
from claire.prompts.fidelity import ADDITIONS, PAPER_RULES, located, side_by_side

PAPER_METHOD = Path(__file__).resolve().parents[3] / "shared" / "docs" / "paper-method.md"


def test_every_id_of_the_papers_method_is_mapped_or_listed():
    if not PAPER_METHOD.is_file():
        pytest.skip("the shared paper-method.md (../shared/docs/) is not beside this checkout")
    ids = re.findall(r"^- ([XECVAP]\d+) ", PAPER_METHOD.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(ids) == 48
    mapped = [rule.id for rule in PAPER_RULES]
    missing = sorted(set(ids) - set(mapped), key=ids.index)
    assert not missing, f"rules of the paper neither mapped nor listed in prompts/fidelity.py: {missing}"
    assert mapped == ids  # once each, in the restatement's order


def test_each_rule_and_addition_points_at_a_line_that_holds_it():
    for rule in PAPER_RULES:
        assert located(rule.where, rule.anchor), (rule.id, rule.where, rule.anchor)
        assert bool(rule.differs) == bool(rule.why), rule.id  # a difference says why
    for added in ADDITIONS:
        assert located(added.where, added.anchor), (added.where, added.anchor)
    assert not any(row["where"].endswith(":?") for row in side_by_side())
    assert located("prompts/verifier.j2", "no such words anywhere") is None


def test_the_paper_presets_settings_are_the_papers():
    from claire.tasks.wikicollide.report import PAPER_SETTINGS

    paper = load_config(None, {})
    for key, (expected, _) in PAPER_SETTINGS.items():
        section, _, name = key.partition(".")
        value = getattr(getattr(paper, section), name)
        assert value == expected, key
    assert paper.agent.finish_action is False and paper.agent.thoughts is True
    practical = load_config(None, {"preset": "practical"})
    assert practical.agent.finish_action is True and practical.agent.thoughts is False


def test_the_paper_preset_adds_no_unlisted_rule_to_its_controller():
    """The rules a reader of the paper would not find (ones an earlier round had added) stay out of what
    the paper preset's controller is shown, and live in the practical variant."""
    from claire.agent.prompt_preview import render_preview

    paper = load_config(None, {})
    practical = load_config(None, {"preset": "practical"})
    shown = " ".join(" ".join(m.content.split()) for m in render_preview("controller", paper, steps=2).messages)
    kept = " ".join(" ".join(m.content.split()) for m in render_preview("controller", practical, steps=2).messages)
    for added in ("each checkable detail", "clarify which one", "clearly states", "steps left", "finish()"):
        assert added not in shown and added in kept, added
    assert "Thought 1:" in shown and "Thought 1:" not in kept and "first think about" in shown


def test_a_rule_left_only_in_a_templates_comment_is_not_anchored(tmp_path, monkeypatch):
    """The guard reads what is sent: a Jinja comment that still names a deleted rule anchors nothing."""
    from claire.prompts import fidelity

    template = tmp_path / "prompts" / "x.j2"
    template.parent.mkdir()
    template.write_text("{#- inputs: text\n    the rule: one indivisible piece -#}\n=== system ===\nSay hello.\n",
                        encoding="utf-8")
    monkeypatch.setattr(fidelity, "ROOT", tmp_path)
    assert fidelity.located("prompts/x.j2", "one indivisible piece") is None
    assert fidelity.located("prompts/x.j2", "Say hello.") == 4
