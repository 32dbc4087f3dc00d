"""How a configuration is resolved from its layers (pydantic-settings): defaults < preset <
claire.toml < environment < flags, and which layer an invalid value is blamed on."""

from __future__ import annotations

import pytest

from claire.config import Config, ConfigError, load_config


@pytest.fixture
def toml(tmp_path):
    path = tmp_path / "claire.toml"
    path.write_text('[agent]\nmax_steps = 7\ndocs_per_query = 3\n\n[llm]\nbase_url = "http://127.0.0.1:9001/v1"\n',
                    encoding="utf-8")
    return path


def test_each_layer_overrides_the_one_below(toml, monkeypatch):
    assert load_config(toml).agent.max_steps == 7  # the file over the defaults (10)
    monkeypatch.setenv("CLAIRE_AGENT__MAX_STEPS", "5")
    config = load_config(toml)
    assert (config.agent.max_steps, config.agent.docs_per_query) == (5, 3)  # the environment over the file, field by field
    assert load_config(toml, {"agent.max_steps": 2}).agent.max_steps == 2  # a flag over the environment


def test_the_preset_sits_under_the_file_and_any_layer_may_name_it(toml, monkeypatch):
    assert load_config(toml).retrieval.mode == "dense"  # paper
    monkeypatch.setenv("CLAIRE_PRESET", "practical")
    config = load_config(toml)
    assert (config.preset, config.retrieval.mode, config.agent.max_steps) == ("practical", "hybrid", 7)
    assert load_config(toml, {"preset": "paper"}).retrieval.mode == "dense"  # the flag names it over the environment
    monkeypatch.setenv("CLAIRE_RETRIEVAL__MODE", "dense")
    assert load_config(toml).retrieval.mode == "dense"  # the environment over the preset


def test_environment_values_are_read_as_text_and_json(monkeypatch):
    monkeypatch.setenv("CLAIRE_LLM__MODEL", "4")  # text needs no quoting here (--set reads TOML)
    monkeypatch.setenv("CLAIRE_AGENT__TOOLS", '["search", "explain"]')
    monkeypatch.setenv("CLAIRE_PROMPTS__VARIANTS__VERIFIER", "strict")
    monkeypatch.setenv("claire_llm__temperature", "0.5")  # names are not case-sensitive
    config = load_config()
    assert config.llm.model == "4" and config.agent.tools[:2] == ["search", "explain"]
    assert config.prompts.variants == {"verifier": "strict"} and config.llm.temperature == 0.5
    monkeypatch.setenv("CLAIRE_AGENT__TOOLS", "search, explain")  # or a comma list
    assert load_config().agent.tools[:2] == ["search", "explain"]


def test_openai_base_url_sits_between_the_file_and_claires_own_variable(toml, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9002/v1")
    assert load_config(toml).llm.base_url == "http://127.0.0.1:9002/v1"
    monkeypatch.setenv("CLAIRE_LLM__BASE_URL", "http://127.0.0.1:9003/v1")
    assert load_config(toml).llm.base_url == "http://127.0.0.1:9003/v1"


@pytest.mark.parametrize("where, blamed", [("env", "environment"), ("flag", "--set or a flag"), ("file", "claire.toml")])
def test_an_invalid_value_names_the_layer_it_came_from(where, blamed, tmp_path, monkeypatch):
    path = tmp_path / "claire.toml"
    path.write_text("[agent]\nmax_steps = 0\n" if where == "file" else "", encoding="utf-8")
    if where == "env":
        monkeypatch.setenv("CLAIRE_AGENT__MAX_STEPS", "zero")
    flags = {"agent.max_steps": -1} if where == "flag" else {}
    with pytest.raises(ConfigError, match=rf"invalid configuration \([^)]*{blamed}[^)]*\): agent.max_steps") as caught:
        load_config(path, flags)
    assert "Traceback" not in str(caught.value)


def test_an_unknown_field_in_the_environment_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("CLAIRE_LLM__MODLE", "gpt-4o")
    with pytest.raises(ConfigError, match=r"\(environment\): llm.modle: unknown setting; allowed in llm: provider, model"):
        load_config()


def test_a_file_that_is_not_toml_is_named(tmp_path):
    path = tmp_path / "claire.toml"
    path.write_text("[agent\nmax_steps = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="claire.toml: not valid TOML"):
        load_config(path)


def test_a_config_built_outside_load_config_reads_no_environment(monkeypatch):
    monkeypatch.setenv("CLAIRE_AGENT__MAX_STEPS", "3")
    assert Config().agent.max_steps == 10
    assert Config.model_validate({"agent": {"max_steps": 4}}).agent.max_steps == 4
    assert load_config().agent.max_steps == 3


def test_a_whole_section_variable_that_is_not_json_is_a_config_error(monkeypatch):
    monkeypatch.setenv("CLAIRE_LLM", "gpt-4o")
    with pytest.raises(ConfigError, match=r"invalid configuration \(environment\): .*\"llm\".*CLAIRE_SECTION__FIELD"):
        load_config()
    monkeypatch.setenv("CLAIRE_LLM", '{"model": "m"}')  # a JSON table is read
    assert load_config().llm.model == "m"


def test_a_bad_environment_value_is_one_short_line(monkeypatch):
    monkeypatch.setenv("CLAIRE_AGENT", "{\"a\":" * 5000 + "1" + "}" * 5000)
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config()
    monkeypatch.delenv("CLAIRE_AGENT")
    monkeypatch.setenv("CLAIRE_AGENT__MAX_STEPS", "x" * 120_000)
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300

