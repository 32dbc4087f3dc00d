"""A stand-in for ``claire serve``'s search route on 127.0.0.1, for tests of the HTTP searcher:
the real request handling (:func:`claire.indexes.http_search.answer`) behind a stdlib server that can
answer the first requests with an error."""

from __future__ import annotations

import json
from typing import Any

from claire.indexes.http_search import answer
from claire.testing.http_server import BackgroundServer, QuietHandler


class SearchServer(BackgroundServer):
    """Serves ``POST /api/search`` from ``retriever`` (as index ``index``); ``fail_first`` answers that
    many requests with ``fail_status`` (and ``Retry-After: retry_after``) first. ``requests`` records
    each (path, body)."""

    def __init__(self, retriever: Any, *, index: str = "tiny", fail_first: int = 0, fail_status: int = 503,
                 retry_after: str | None = None) -> None:
        self.retriever, self.index, self.fail_first = retriever, index, fail_first
        self.fail_status, self.retry_after = fail_status, retry_after
        self.requests: list[tuple[str, Any]] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
                owner.requests.append((self.path, body))
                if self.path != "/api/search":
                    status, payload = 404, {"detail": "Not Found"}
                elif owner.fail_first > 0:
                    owner.fail_first -= 1
                    status, payload = owner.fail_status, {"detail": "busy"}
                else:
                    status, payload = answer(owner.retriever, body, index=owner.index)
                retry = {"Retry-After": owner.retry_after} if status != 200 and owner.retry_after is not None else {}
                self.send_body(status, payload, retry)

        super().__init__(Handler)
        self.url = f"http://127.0.0.1:{self.port}/api/search"
