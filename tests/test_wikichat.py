"""The WikiChat search client against a local HTTP server that speaks the API's shape."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from claire.errors import RetrievalError
from claire.indexes.wikichat import WikiChatRetriever


class MockWikiChat:
    """Answers POSTs like the WikiChat retriever; ``script`` holds canned (status, headers, body)
    answers served first, in order."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list[tuple[int, dict[str, str], object]] = []
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                mock.requests.append(body)
                status, headers, payload = mock.script.pop(0) if mock.script else (200, {}, mock.answer(body))
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/wikipedia_20250320"

    @staticmethod
    def answer(body: dict) -> list[dict]:
        def result(query: str, i: int) -> dict:
            title = "Own Article" if i % 2 == 0 else f"Other {i}"
            return {
                "document_title": title,
                "section_title": "Intro" if i else "",
                "content": f"Passage {i} about {query}.",
                "last_edit_date": "2025-03-20",
                "url": f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}",
                "num_tokens": 12,
                "block_metadata": {"type": "table" if i == 1 else "text", "language": "en"},
                "similarity_score": round(0.9 - i / 100, 3),
                "probability_score": 0.1,
                "summary": [],
            }

        return [{"results": [result(q, i) for i in range(body["num_blocks"])]} for q in body["query"]]

    def __enter__(self) -> MockWikiChat:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


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
    mock.script = [(429, {"Retry-After": "1"}, {"error": "rate limit exceeded: 50 per 1 minute"})]
    started = time.monotonic()
    with WikiChatRetriever(mock.url, max_attempts=3) as client:
        hits = client.search("tower", k=2)
    assert len(hits) == 2 and len(mock.requests) == 2
    assert time.monotonic() - started >= 0.9


def test_gives_up_with_a_clear_error(mock):
    mock.script = [(503, {"Retry-After": "0"}, {"detail": "busy"})] * 3
    with WikiChatRetriever(mock.url, max_attempts=3) as client, pytest.raises(RetrievalError) as info:
        client.search("tower")
    assert "failed after 3 attempts: HTTP 503" in str(info.value)
    assert len(mock.requests) == 3


def test_client_errors_are_not_retried(mock):
    mock.script = [(422, {}, {"detail": "num_blocks must be <= 100"})]
    with WikiChatRetriever(mock.url) as client, pytest.raises(RetrievalError, match="HTTP 422 .*num_blocks"):
        client.search("tower")
    assert len(mock.requests) == 1


def test_unexpected_answers_are_explained(mock):
    mock.script = [(200, {}, {"results": []})]
    with WikiChatRetriever(mock.url) as client, pytest.raises(RetrievalError, match="unexpected answer"):
        client.search("tower")


def test_unreachable_server_is_retried_then_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = WikiChatRetriever(f"http://127.0.0.1:{port}/x", max_attempts=2, max_wait=0.05)
    with client, pytest.raises(RetrievalError, match="failed after 2 attempts: ConnectError"):
        client.search("tower")


def test_bad_arguments_are_explained(mock):
    with WikiChatRetriever(mock.url) as client:
        with pytest.raises(RetrievalError, match="between 1 and 100"):
            client.search("tower", k=0)
        with pytest.raises(RetrievalError, match="empty"):
            client.search("   ")
    assert mock.requests == []
