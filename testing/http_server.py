"""The one way CLAIRE's test servers run: a threaded HTTP server on 127.0.0.1 (a free port) served
from a thread of its own, started and stopped as a context manager, and the quiet handler base
their request handlers share."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """A keep-alive (HTTP/1.1) request handler that logs nothing and answers with :meth:`send_body`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        """Keep test output quiet."""
        return None

    def send_body(self, status: int, body: Any, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
        """Answer ``status`` with ``body`` (bytes as they are, anything else as JSON) and ``headers``."""
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of concurrent clients must not wait on a full backlog


class BackgroundServer:
    """Serves ``handler`` on 127.0.0.1 (on ``port``, else a free one) from a background thread; ``port`` once created."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0):
        self._httpd = _Server(("127.0.0.1", port), handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self._httpd.server_address[1]

    def start(self) -> Any:
        """Serve on a thread of its own."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_until_interrupted(server: BackgroundServer, address: str, note: str | None = None) -> None:
    """Run a test server from the command line: print its address (and a note on stderr), then
    serve until Ctrl-C."""
    import sys
    import time

    with server:
        print(address.format(port=server.port), flush=True)
        if note:
            print(note, file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
