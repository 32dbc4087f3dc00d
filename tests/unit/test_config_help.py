"""`claire config show` explains each setting: every setting describes itself in its field."""

from __future__ import annotations

from typer.testing import CliRunner

from claire.cli.app import app
from claire.config import SECTIONS, Config, describe


def test_every_setting_describes_itself():
    for section in SECTIONS:
        for name in Config.model_fields[section].annotation.model_fields:
            assert describe(section, name), f"{section}.{name} has no description"
    assert "known default" in describe("llm", "context_window")
    assert describe("agent", "max_steps") == "research steps per claim"
    assert describe("agent", "nonsense") == "" and describe("nonsense", "x") == ""


def test_config_show_prints_descriptions(clean_env, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert "research steps per claim" in result.output and "context_window" in result.output
