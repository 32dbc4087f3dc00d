"""Reading a cited page: a URL that cannot even be parsed or connected to is one source that could
not be read, with its reason, never an exception that stops the caller."""

from __future__ import annotations

import pytest

from claire.settings import ResolveConfig
from claire.sources.reading import SourceReader


@pytest.mark.parametrize("url", ["http://[::1/", "http://" + "a" * 70 + ".example/x", "http://example.org:99999/x"])
async def test_a_malformed_url_is_a_source_that_could_not_be_read(url, tmp_path):
    reader = SourceReader(ResolveConfig(cache_dir=tmp_path, allow_private=False, fetch_timeout=2))
    page = await reader.read(url)
    assert not page.readable and page.error.startswith("could not read: ")
    assert "\n" not in page.error


async def test_the_cache_serves_a_page_only_for_its_own_url_and_not_for_ever(tmp_path):
    from datetime import datetime, timedelta, timezone

    from claire.sources.reading import SourcePage

    reader = SourceReader(ResolveConfig(cache_dir=tmp_path, fetch=False, cache_days=30))
    now = datetime.now(timezone.utc)
    fresh = SourcePage(url="https://a.example/x", text="A page that says enough words to be read.", origin="fetch",
                       fetched_at=now.isoformat(timespec="seconds"))
    reader._keep(fresh)
    assert (await reader.read("https://a.example/x")).origin == "cache"
    reader._cache_file("https://b.example/y").write_bytes(reader._cache_file("https://a.example/x").read_bytes())
    assert not (await reader.read("https://b.example/y")).readable  # another URL's page under its name
    old = fresh.model_copy(update={"fetched_at": (now - timedelta(days=31)).isoformat(timespec="seconds")})
    reader._keep(old)
    assert not (await reader.read("https://a.example/x")).readable  # too old: fetched again (fetching is off here)


async def test_a_password_in_a_cited_url_is_never_kept_or_shown():
    from claire.config import Config
    from claire.domain import Reference
    from claire.resolving.resolver import Resolver
    from claire.tasks.sides.records import Side

    config = Config()
    resolver = Resolver(llm=None, retriever=None, prompts=None, checker=None, settings=config.resolve)
    judged = await resolver.judge_safely(Side(text="x"), Reference(url="http://alice:S3CRET@host.example/a", title="t"),
                                         {"host.example/a": None}, "1", "2")
    assert "S3CRET" not in judged.model_dump_json() and judged.reference.url == "http://host.example/a"
