"""The WikiChat search client against a local HTTP server that speaks the API's shape."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from claire.errors import RetrievalError
from claire.indexes.wikichat import WikiChatRetriever
from claire.testing.wikichat_mock import MockWikiChat


@pytest.fixture
def mock() -> Iterator[MockWikiChat]:
    with MockWikiChat() as server:
        yield server


def test_search_sends_the_documented_request_and_reads_blocks(mock):
    with WikiChatRetriever(mock.url) as client:
        hits = client.search("Who built the Eiffel Tower?", k=3)
    assert mock.requests == [
        {
            "query": ["Who built the Eiffel Tower?"],
            "num_blocks": 3,
            "search_filters": [{"field_name": "language", "filter_type": "eq", "field_value": "en"}],
        }
    ]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert [h.score for h in hits] == [0.9, 0.89, 0.88]
    first, second = hits[0].block, hits[1].block
    assert (first.document_title, first.section_title, first.last_edit_date) == ("Own Article", "", "2025-03-20")
    assert second.block_type == "table" and second.url == "https://en.wikipedia.org/wiki/Other_1"
    assert len(first.id) == 16


def test_exclusion_asks_for_more_and_filters_the_article(mock):
    with WikiChatRetriever(mock.url) as client:
        hits = client.search("tower", exclude_title="Own Article", k=5)
    assert mock.requests[0]["num_blocks"] == 15
    assert len(hits) == 5 and all(h.block.document_title != "Own Article" for h in hits)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_search_many_uses_one_request(mock):
    with WikiChatRetriever(mock.url, language=None) as client:
        answers = client.search_many(["a", "b", "c"], k=2)
    assert len(mock.requests) == 1 and mock.requests[0]["query"] == ["a", "b", "c"]
    assert "search_filters" not in mock.requests[0]
    assert [[h.block.content for h in hits] for hits in answers][2] == ["Passage 0 about c.", "Passage 1 about c."]


def test_rate_limit_is_retried_after_the_servers_delay(mock):
    mock.script = [(429, {"Retry-After": "7"}, {"error": "rate limit exceeded: 50 per 1 minute"})]
    waits: list[float] = []
    with WikiChatRetriever(mock.url, max_attempts=3) as client:
        client.service.sleep = waits.append  # a clock of our own: no real waiting
        hits = client.search("tower", k=2)
    assert len(hits) == 2 and len(mock.requests) == 2
    assert waits == [7.0]  # what the server asked, not the backoff


def test_gives_up_with_a_clear_error(mock):
    mock.script = [(503, {"Retry-After": "0"}, {"detail": "busy"})] * 3
    with WikiChatRetriever(mock.url, max_attempts=3) as client, pytest.raises(RetrievalError) as info:
        client.search("tower")
    assert "failed after 3 attempts (HTTP 503)" in str(info.value) and "rate limited" in str(info.value)
    assert len(mock.requests) == 3


def test_client_errors_are_not_retried(mock):
    mock.script = [(422, {}, {"detail": "num_blocks must be <= 100"})]
    with WikiChatRetriever(mock.url) as client, pytest.raises(RetrievalError, match="HTTP 422: num_blocks"):
        client.search("tower")
    assert len(mock.requests) == 1


def test_unexpected_answers_are_explained(mock):
    mock.script = [(200, {}, {"results": []})]
    with WikiChatRetriever(mock.url) as client, pytest.raises(RetrievalError, match="unexpected answer"):
        client.search("tower")


def test_bad_arguments_are_explained(mock):
    with WikiChatRetriever(mock.url) as client:
        with pytest.raises(RetrievalError, match="between 1 and 100"):
            client.search("tower", k=0)
        with pytest.raises(RetrievalError, match="empty"):
            client.search("   ")
    assert mock.requests == []
