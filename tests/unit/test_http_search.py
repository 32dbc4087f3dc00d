"""The HTTP search contract (``POST .../api/search``) without a server: which URLs name a
CLAIRE search endpoint (the server path is tested in tests/integration/test_http_search.py)."""

from __future__ import annotations

from claire.indexes.http_search import is_search_endpoint


def test_urls_choose_the_backend():
    assert is_search_endpoint("http://127.0.0.1:8000/api/search")
    assert is_search_endpoint("https://claire.example.org/team/api/search/")
    assert not is_search_endpoint("http://localhost:6333")
    assert not is_search_endpoint("file:/tmp/qdrant")
    assert not is_search_endpoint(None)


