"""The one way CLAIRE's test servers run: a threaded HTTP server on 127.0.0.1 (a free port) served
from a thread of its own, started and stopped as a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of concurrent clients must not wait on a full backlog


class BackgroundServer:
    """Serves ``handler`` on 127.0.0.1 from a background thread; ``port`` once created."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self._httpd = _Server(("127.0.0.1", 0), handler)
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
