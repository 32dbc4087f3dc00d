"""Secrets never appear where CLAIRE shows or stores a URL: credentials in ``user:pw@`` and query
parameters that carry a key, token, secret or password are masked in messages and in a run's
configuration; other parameters stay."""

from __future__ import annotations

import pytest

from claire.config import load_config
from claire.errors import ConfigError, redact


@pytest.mark.parametrize("url, shown", [
    ("http://h/v1?api-key=SECRETKEY1", "http://h/v1?api-key=****"),
    ("http://h/v1?x=1&api_key=S2&token=T3", "http://h/v1?x=1&api_key=****&token=****"),
    ("https://h/v1?key=abc#frag", "https://h/v1?key=****#frag"),
    ("https://h/?access_token=t1&monkey=1", "https://h/?access_token=****&monkey=1"),
    ("https://user:pw@h/v1", "https://****@h/v1"),
])
def test_secrets_in_urls_are_masked(url, shown):
    assert redact(f"cannot reach {url} now") == f"cannot reach {shown} now"


def test_a_key_in_the_base_urls_query_never_reaches_the_run_configuration():
    config = load_config(None, {"llm.base_url": "http://127.0.0.1:9/v1?api-key=SECRETKEY99"})
    assert "SECRETKEY99" not in str(config.public_dict())


@pytest.mark.parametrize("key, value", [("llm.timeout", float("inf")), ("llm.retry_max_wait", float("inf")),
                                        ("llm.retry_base_wait", 1e300), ("agent.claim_timeout", float("nan"))])
def test_waits_are_bounded(key, value):
    with pytest.raises(ConfigError):
        load_config(None, {key: value})
