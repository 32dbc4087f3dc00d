"""``claire serve``'s own settings, resolved as the configuration is: defaults < CLAIRE_SERVE_*
variables < flags."""

from __future__ import annotations

import pytest

from claire.errors import ConfigError
from claire.web.settings import ServeSettings


def test_flags_win_over_the_environment_and_the_environment_over_the_defaults(monkeypatch):
    assert ServeSettings.resolve(port=None).port == 8000
    monkeypatch.setenv("CLAIRE_SERVE_PORT", "9100")
    monkeypatch.setenv("CLAIRE_SERVE_TOKEN", "tok-from-env")
    monkeypatch.setenv("CLAIRE_SERVE_ALLOWED_HOSTS", '["claire.lab.example"]')
    from_env = ServeSettings.resolve(port=None, token=None)
    assert (from_env.port, from_env.bearer_token(), from_env.allowed_hosts) == (9100, "tok-from-env", ["claire.lab.example"])
    assert ServeSettings.resolve(port=9200, token="tok-flag").port == 9200
    assert ServeSettings.resolve(token="tok-flag").bearer_token() == "tok-flag"


@pytest.mark.parametrize("variable, value, named", [("CLAIRE_SERVE_PORT", "eighty", "field port:"),
                                                     ("CLAIRE_SERVE_MAX_BODY_BYTES", "10", "field max_body_bytes:"),
                                                     ("CLAIRE_SERVE_CORS_ORIGINS", "http://a.example", "JSON lists")])
def test_an_invalid_variable_is_a_config_error_naming_the_setting(variable, value, named, monkeypatch):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=rf"invalid server settings.*{named}"):
        ServeSettings.resolve()


def test_the_token_is_never_shown(monkeypatch):
    monkeypatch.setenv("CLAIRE_SERVE_TOKEN", "tok-secret-123")
    shown = repr(ServeSettings.resolve()) + str(ServeSettings.resolve().model_dump())
    assert "tok-secret-123" not in shown
