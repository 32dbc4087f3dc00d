"""The HTTP search contract (``POST .../api/search``): the client against a real local HTTP server
that answers with :func:`claire.indexes.http_search.answer` over a real on-disk MiniLM index."""

from __future__ import annotations

import json

import pytest

from claire.errors import RetrievalError
from claire.domain import Block
from claire.indexes.http_search import HttpSearcher, answer
from claire.indexes.registry import open_searcher
from claire.indexes.retriever import build_index, open_retriever
from claire.testing.cli import run_claire
from claire.testing.search_server import SearchServer

BLOCKS = [
    Block(id="bridge-0", document_title="Old Bridge", content="The old stone bridge crosses the river since 1850."),
    Block(id="bridge-1", document_title="New Bridge", content="A steel bridge over the river opened in 1990."),
    Block(id="tower-0", document_title="Clock Tower", content="The clock tower in the square strikes every hour."),
    Block(id="lake-0", document_title="Blue Lake", content="Blue Lake is a deep mountain lake full of trout."),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("indexes")
    build_index(BLOCKS, name="tiny", embedder="minilm", root=root, show_progress=False)
    with open_retriever("tiny", root=root) as retriever:
        yield root, retriever


def test_client_gets_the_same_ranking_as_the_local_index(tiny):
    root, retriever = tiny
    with SearchServer(retriever) as server, open_searcher("qdrant", root=root, url=server.url) as remote:
        assert isinstance(remote, HttpSearcher)
        local = retriever.search("river bridge", k=3, exclude_title="Old Bridge")
        found = remote.search("river bridge", k=3, exclude_title="Old Bridge")
        assert [(h.block, h.rank) for h in found] == [(h.block, h.rank) for h in local]
        assert [h.score for h in found] == pytest.approx([h.score for h in local])
        assert all(h.block.document_title != "Old Bridge" for h in found)
        assert remote.index == "tiny"
        assert server.requests[-1] == ("/api/search", {"query": "river bridge", "k": 3, "exclude_title": "Old Bridge",
                                                       "mode": "hybrid", "candidates": 50})
        assert [h.block.id for h in remote.search("trout lake", k=1, mode="bm25")] == ["lake-0"]


def test_busy_server_is_retried_and_refusals_are_explained(tiny):
    _, retriever = tiny
    with SearchServer(retriever, fail_first=2) as server:
        with HttpSearcher(server.url, max_attempts=3, max_wait=0.05) as remote:
            assert remote.search("clock", k=1)[0].block.id == "tower-0"
        assert len(server.requests) == 3
        with HttpSearcher(server.url.replace("/api/search", "/other/api/search")) as wrong:
            with pytest.raises(RetrievalError, match="HTTP 404: Not Found"):
                wrong.search("clock")
        with HttpSearcher(server.url) as remote:
            with pytest.raises(RetrievalError, match="between 1 and 100"):
                remote.search("clock", k=500)
    assert answer(retriever, {"query": ""}, index="tiny")[0] == 422
    assert answer(retriever, {"query": "x", "mode": "fuzzy"}, index="tiny")[0] == 422
    with HttpSearcher(server.url, max_attempts=2, max_wait=0.05) as gone:  # the server has stopped
        with pytest.raises(RetrievalError, match="is `claire serve` running"):
            gone.search("clock")


def test_cli_search_uses_the_server(tiny, tmp_path):
    _, retriever = tiny
    with SearchServer(retriever) as server:
        result = run_claire("search", "steel bridge", "-k", "2", "--json", "--url", server.url, cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert [hit["id"] for hit in json.loads(result.stdout)][0] == "bridge-1"
    assert not (tmp_path / "cache" / "indexes").exists()  # no local index was opened or built


def test_a_429_waits_as_long_as_the_server_asks(tiny):
    _, retriever = tiny
    with SearchServer(retriever, fail_first=1, fail_status=429, retry_after="4") as server:
        client = HttpSearcher(server.url, max_attempts=3, max_wait=10)
        waits: list[float] = []
        client.service.sleep = waits.append  # a clock of our own: no real waiting
        hits = client.search("steel bridge", k=1)
        client.close()
    assert hits[0].block.id == "bridge-1" and len(server.requests) == 2
    assert waits == [4.0]  # the server's Retry-After, not the exponential backoff
