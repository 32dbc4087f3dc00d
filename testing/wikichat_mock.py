"""A local HTTP server that answers like the WikiChat search API, for tests of the WikiChat client."""

from __future__ import annotations

import json

from claire.testing.http_server import BackgroundServer, QuietHandler


class MockWikiChat(BackgroundServer):
    """Answers POSTs like the WikiChat retriever; ``script`` holds canned (status, headers, body)
    answers served first, in order."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list[tuple[int, dict[str, str], object]] = []
        mock = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                mock.requests.append(body)
                status, headers, payload = mock.script.pop(0) if mock.script else (200, {}, mock.answer(body))
                self.send_body(status, payload, headers)

        super().__init__(Handler)
        self.url = f"http://127.0.0.1:{self.port}/wikipedia_20250320"

    @staticmethod
    def answer(body: dict) -> list[dict]:
        """The search API's answer to one request body."""
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
