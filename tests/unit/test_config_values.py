"""Settings read as meant: a misspelt environment section is named, --set values that look like dates
or numbers stay text where text is wanted, endpoint URLs are checked when read, and a folder given
as the config file or a run directory in use is named."""

from __future__ import annotations

import pytest

from claire.config import ConfigWarning, load_config, parse_assignment
from claire.errors import ConfigError
from claire.runs.predictions import PredictionLog, refuse_if_in_use


def test_misspelt_environment_section_is_reported(monkeypatch):
    monkeypatch.setenv("CLAIRE_AGNET__MAX_STEPS", "3")
    with pytest.warns(ConfigWarning, match="CLAIRE_AGNET__MAX_STEPS"):
        config = load_config()
    assert config.agent.max_steps == 10


def test_set_values_that_look_like_dates_or_numbers():
    key, value = parse_assignment("llm.model=2024-08-06")
    assert load_config(overrides={key: value}).llm.model == "2024-08-06"
    with pytest.raises(ConfigError, match="quote it"):
        load_config(overrides=dict([parse_assignment("llm.model=4")]))


@pytest.mark.parametrize("url, problem", [("not a url", "not an http"), ("http://127.0.0.1:abc/v1", "port"),
                                           ("ftp://host/v1", "not an http")])
def test_endpoint_urls_are_checked_when_read(url, problem):
    with pytest.raises(ConfigError, match=problem):
        load_config(overrides={"llm.base_url": url})
    with pytest.raises(ConfigError, match=problem):
        load_config(overrides={"retrieval.url": url})


def test_a_config_folder_and_a_busy_run_directory_are_named(tmp_path):
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(tmp_path)
    log = PredictionLog(tmp_path / "run")
    try:
        with pytest.raises(ConfigError, match="in use by another"):
            refuse_if_in_use(tmp_path / "run")
    finally:
        log.close()
    refuse_if_in_use(tmp_path / "run")  # free again
