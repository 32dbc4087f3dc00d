"""Credentials never travel further than they must: URL passwords and registered keys are masked in
anything shown, and a key put in the base URL becomes the key."""

from __future__ import annotations

from claire.config import load_config
from claire.errors import ConfigError, redact


def test_redact_masks_url_passwords_and_registered_keys(monkeypatch):
    assert redact("cannot connect to https://bob:hunter2@example.org/v1") == "cannot connect to https://****@example.org/v1"
    monkeypatch.setenv("MY_KEY", "sk-registered-abcdef123456")
    config = load_config(overrides={"llm.api_key_env": "MY_KEY"})
    assert config.llm.resolved_api_key() == "sk-registered-abcdef123456"
    assert "sk-registered" not in redact("echo sk-registered-abcdef123456")
    assert "sk-registered" not in str(ConfigError("the key sk-registered-abcdef123456 was refused"))


def test_credentials_leave_the_base_url_and_become_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:sk-in-url-0123456789@127.0.0.1:8080/v1")
    config = load_config()
    assert config.llm.base_url == "http://127.0.0.1:8080/v1"
    assert config.llm.resolved_api_key() == "sk-in-url-0123456789"
    assert "sk-in-url" not in redact("failed: sk-in-url-0123456789")  # registered as a secret
    kept = load_config(overrides={"llm.base_url": "http://u:sk-other-0123456789@[::1]:9/v1", "llm.api_key": "mine"})
    assert kept.llm.base_url == "http://[::1]:9/v1" and kept.llm.resolved_api_key() == "mine"
