"""Reading a cited page: a URL that cannot even be parsed or connected to is one source that could
not be read, with its reason, never an exception that stops the caller."""

from __future__ import annotations

import pytest

from claire.config import ResolveConfig
from claire.sources.reading import SourceReader


@pytest.mark.parametrize("url", ["http://[::1/", "http://" + "a" * 70 + ".example/x", "http://example.org:99999/x"])
async def test_a_malformed_url_is_a_source_that_could_not_be_read(url, tmp_path):
    reader = SourceReader(ResolveConfig(cache_dir=tmp_path, allow_private=False, fetch_timeout=2))
    page = await reader.read(url)
    assert not page.readable and page.error.startswith("could not read: ")
    assert "\n" not in page.error
