"""Stand-ins for a live wiki, for the patrol's tests and benchmark: an EventStreams-like server of
``recentchange`` events and a MediaWiki Action API serving revisions, both on 127.0.0.1.

:class:`EventStreamServer` serves recorded events as server-sent events (``id:`` lines holding each
event's position, or an id of the test's choosing, ``data:`` its JSON), honours ``Last-Event-ID``
the way EventStreams does (the stream resumes after that event), can drop the connection after a
number of events (to test reconnection) and can hold the stream open at its end, as a live stream
does. :class:`WikiApiServer` answers ``action=query&prop=revisions&revids=...`` from a dict of
revisions (``{revid: (page id, title, wikitext)}``), says ``badrevids`` for revisions it does not
have and ``missing`` for deleted pages, can answer ``maxlag`` once with a Retry-After or fail its
first requests with HTTP 500, and records every request's User-Agent.
:func:`change_event` writes one event in the stream's shape.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from claire.testing.http_server import BackgroundServer, QuietHandler, serve_until_interrupted


def change_event(title: str, old: int | None, new: int, *, wiki: str = "enwiki", namespace: int = 0, bot: bool = False,
                 type: str = "edit", server_url: str = "https://en.wikipedia.org", timestamp: float | None = None,
                 user: str = "Editor", comment: str = "") -> dict[str, Any]:
    """One ``recentchange`` event, shaped as Wikimedia's stream sends it."""
    return {
        "$schema": "/mediawiki/recentchange/1.0.0", "meta": {"id": f"event-{wiki}-{new}", "domain": "en.wikipedia.org",
                                                             "stream": "mediawiki.recentchange"},
        "id": new, "type": type, "namespace": namespace, "title": title, "comment": comment,
        "timestamp": int(timestamp if timestamp is not None else time.time()), "user": user, "bot": bot,
        "server_url": server_url, "server_name": urlsplit(server_url).hostname, "server_script_path": "/w",
        "wiki": wiki, "minor": False, "length": {"old": 100, "new": 120},
        "revision": {"old": old, "new": new} if old else {"new": new},
    }


class EventStreamServer(BackgroundServer):
    """Server-sent ``recentchange`` events from a list (``raw`` strings are sent as they are, to
    play a malformed event). ``drop_after``: close the first connection after that many events;
    ``hold``: keep the stream open at its end (seconds) as a live stream does; ``interval``:
    seconds between events, on a fixed schedule from the connection's start, as a live wiki makes
    them whether or not the reader keeps up (``produced`` keeps each position's scheduled time,
    from the first connection that reached it); ``ids``: the ``id:`` to send for some events
    ({position: id}; the position itself otherwise)."""

    def __init__(self, events: list[dict[str, Any] | str], *, drop_after: int | None = None, hold: float = 0.0,
                 interval: float = 0.0, ids: dict[int, str] | None = None):
        self.events = [e if isinstance(e, str) else json.dumps(e) for e in events]
        self.drop_after = drop_after
        self.hold = hold
        self.interval = interval
        self.ids = ids or {}
        self.connections: list[str | None] = []  # the Last-Event-ID of each connection
        self.produced: dict[int, float] = {}  # position -> when the stream made the event (time.time())
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                last = self.headers.get("Last-Event-ID")
                if last is not None:  # the header's bytes as sent (http.server reads them as Latin-1)
                    last = last.encode("latin-1").decode("utf-8", "replace")
                with server._lock:
                    server.connections.append(last)
                    first = len(server.connections) == 1
                chosen = {value: position for position, value in server.ids.items()}
                start = chosen[last] + 1 if last in chosen else int(last) + 1 if last and last.isdigit() else 0
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(b"retry: 100\n\n")
                    opened = time.time()
                    for sent, position in enumerate(range(start, len(server.events))):
                        if first and server.drop_after is not None and sent >= server.drop_after:
                            return  # the connection drops mid-stream
                        due = opened + sent * server.interval
                        if due > time.time():
                            time.sleep(due - time.time())
                        with server._lock:
                            server.produced.setdefault(position, due)
                        event_id = server.ids.get(position, position)
                        self.wfile.write(f"id: {event_id}\nevent: message\ndata: {server.events[position]}\n\n".encode())
                        self.wfile.flush()
                    end = time.monotonic() + server.hold
                    while time.monotonic() < end:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        time.sleep(0.1)
                except (BrokenPipeError, ConnectionResetError):
                    return

        super().__init__(Handler)

    @property
    def url(self) -> str:
        """The stream's URL."""
        return f"http://127.0.0.1:{self.port}/v2/stream/recentchange"


class WikiApiServer(BackgroundServer):
    """A MediaWiki Action API double: revisions from ``revisions`` ({revid: (page id, title,
    wikitext)}); ``deleted``: page titles the API reports missing; ``maxlag_once``: the first request
    is told the wiki is lagging (with Retry-After); ``categories``: {title: [category, ...]};
    ``failures``: the first requests answered with HTTP 500 (or, with ``api_error``, with HTTP 200
    and that Action API error code, as a wiki whose database is down answers)."""

    def __init__(self, revisions: dict[int, tuple[int, str, str]], *, deleted: set[str] | None = None,
                 maxlag_once: bool = False, categories: dict[str, list[str]] | None = None, latency: float = 0.0,
                 failures: int = 0, api_error: str | None = None, port: int = 0):
        self.revisions = revisions
        self.deleted = deleted or set()
        self.maxlag_left = 1 if maxlag_once else 0
        self.failures_left = failures
        self.categories = categories or {}
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):

            def do_GET(self) -> None:
                if not urlsplit(self.path).path.endswith("/api.php"):
                    self.send_body(404, {"error": "no such page"})
                    return
                query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
                with server._lock:
                    server.requests.append({**query, "user_agent": self.headers.get("User-Agent", "")})
                    lagging = server.maxlag_left > 0
                    server.maxlag_left = max(server.maxlag_left - 1, 0)
                    failing = server.failures_left > 0
                    server.failures_left = max(server.failures_left - 1, 0)
                if server.latency:
                    time.sleep(server.latency)
                if failing and api_error:
                    self.send_body(200, {"error": {"code": api_error, "info": "[abc123] Exception caught: Cannot "
                                                                               "access the database"}})
                    return
                if failing:
                    self.send_body(500, {"error": "the database is on fire"})
                    return
                if lagging:
                    self.send_body(200, {"error": {"code": "maxlag", "info": "Waiting for a database server: 7 seconds lagged."}},
                               {"Retry-After": "0", "X-Database-Lag": "7"})
                    return
                self.send_body(200, server.answer(query))

        super().__init__(Handler, port)

    @property
    def api_url(self) -> str:
        """The API's address."""
        return f"http://127.0.0.1:{self.port}/w/api.php"

    def answer(self, query: dict[str, str]) -> dict[str, Any]:
        """The ``query`` answer (formatversion 2) for a request's revision ids."""
        wanted = [int(r) for r in query.get("revids", "").split("|") if r.strip().isdigit()]
        pages: dict[int, dict[str, Any]] = {}
        bad = {}
        for revid in wanted:
            if revid not in self.revisions:
                bad[str(revid)] = {"revid": revid}
                continue
            page_id, title, text = self.revisions[revid]
            if title in self.deleted:
                pages[page_id] = {"ns": 0, "title": title, "missing": True}
                continue
            page = pages.setdefault(page_id, {"pageid": page_id, "ns": 0, "title": title, "revisions": []})
            page["revisions"].append({"revid": revid, "slots": {"main": {"contentmodel": "wikitext", "content": text}}})
            if "categories" in query.get("prop", ""):
                page["categories"] = [{"ns": 14, "title": f"Category:{c}"} for c in self.categories.get(title, [])]
        answer: dict[str, Any] = {"batchcomplete": True, "query": {"pages": list(pages.values())}}
        if bad:
            answer["query"]["badrevids"] = bad
        return answer


def main() -> None:
    """Serve recorded MediaWiki Action API answers (``{"revisions": {REVID: [PAGE_ID, TITLE, WIKITEXT]}}``)
    until interrupted: what a replayed patrol asks the wiki, without the network."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("revisions", type=Path, help="a JSON file of recorded revisions")
    parser.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    options = parser.parse_args()
    recorded = json.loads(options.revisions.read_text(encoding="utf-8"))["revisions"]
    revisions = {int(revid): (int(page), str(title), str(text)) for revid, (page, title, text) in recorded.items()}
    serve_until_interrupted(WikiApiServer(revisions, port=options.port), "http://127.0.0.1:{port}/w/api.php")


if __name__ == "__main__":
    main()
