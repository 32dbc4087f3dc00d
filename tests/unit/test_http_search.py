"""The HTTP search contract (``POST .../api/search``): the client against a real local HTTP server
that answers with :func:`claire.indexes.http_search.answer` over a real on-disk MiniLM index."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from claire.indexes.corpus import Block
from claire.indexes.http_search import answer, is_search_endpoint
from claire.indexes.retriever import build_index, open_retriever

BLOCKS = [
    Block(id="bridge-0", document_title="Old Bridge", content="The old stone bridge crosses the river since 1850."),
    Block(id="bridge-1", document_title="New Bridge", content="A steel bridge over the river opened in 1990."),
    Block(id="tower-0", document_title="Clock Tower", content="The clock tower in the square strikes every hour."),
    Block(id="lake-0", document_title="Blue Lake", content="Blue Lake is a deep mountain lake full of trout."),
]


class SearchServer:
    """A stand-in for ``claire serve``'s search route: stdlib HTTP in front of ``answer``.
    ``fail_first`` answers that many requests with ``fail_status`` (and ``Retry-After: retry_after``) first."""

    def __init__(self, retriever, fail_first: int = 0, fail_status: int = 503, retry_after: str | None = None) -> None:
        self.retriever, self.fail_first, self.requests = retriever, fail_first, []
        self.fail_status, self.retry_after = fail_status, retry_after
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
                owner.requests.append((self.path, body))
                if self.path != "/api/search":
                    status, payload = 404, {"detail": "Not Found"}
                elif owner.fail_first > 0:
                    owner.fail_first -= 1
                    status, payload = owner.fail_status, {"detail": "busy"}
                else:
                    status, payload = answer(owner.retriever, body, index="tiny")
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status != 200 and owner.retry_after is not None:
                    self.send_header("Retry-After", owner.retry_after)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api/search"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> SearchServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("indexes")
    build_index(BLOCKS, name="tiny", embedder="minilm", root=root, show_progress=False)
    with open_retriever("tiny", root=root) as retriever:
        yield root, retriever


def test_urls_choose_the_backend():
    assert is_search_endpoint("http://127.0.0.1:8000/api/search")
    assert is_search_endpoint("https://claire.example.org/team/api/search/")
    assert not is_search_endpoint("http://localhost:6333")
    assert not is_search_endpoint("file:/tmp/qdrant")
    assert not is_search_endpoint(None)


