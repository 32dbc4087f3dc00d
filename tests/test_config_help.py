"""`claire config show` explains each setting: descriptions come from the fields or the help table."""

from __future__ import annotations

from typer.testing import CliRunner

from claire.cli import app
from claire.config import Config
from claire.config_help import HELP, describe


def test_every_help_entry_names_a_real_setting_and_fields_describe_themselves():
    for key in HELP:
        section, name = key.split(".")
        assert name in Config.model_fields[section].annotation.model_fields, key
    assert "known default" in describe("llm", "context_window")  # from the field's own description
    assert describe("agent", "max_steps") == HELP["agent.max_steps"]


def test_config_show_prints_descriptions(clean_env, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    assert "research steps per claim" in result.output and "context_window" in result.output
