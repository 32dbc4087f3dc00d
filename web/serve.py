"""Running the web app with uvicorn: in the foreground for ``claire serve``, or on a thread of
this process for tests and benchmarks (``ServerThread``, which picks a free port).

Both close connections that hold a socket without using it: an idle keep-alive connection after
``KEEP_ALIVE_S`` (uvicorn's own timeout) and — what uvicorn has no setting for — a client that has
not sent a whole request (headers and body) ``request_timeout`` seconds after it connected or got
its last answer (:func:`prompt_clients_protocol`). A request that was read in full may take as long
as it needs (a job's event stream stays open).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import h11
import uvicorn
from rich.console import Console
from uvicorn.protocols.http.h11_impl import H11Protocol

from claire.agent.runtime import open_retrieval
from claire.config import Config
from claire.jobs.store import JobStore
from claire.errors import ClaireError
from claire.llm.client import ChatClient
from claire.web.app import create_app
from claire.livewiki.patrol import patrol_source
from claire.web.security import check_bind
from claire.web.settings import ServeSettings


KEEP_ALIVE_S = 5  # seconds an idle keep-alive connection stays open


def prompt_clients_protocol(request_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose client has not sent a whole request
    ``request_timeout`` seconds after it connected or got its last answer (slow or partial
    requests must not hold sockets forever)."""

    class PromptClients(H11Protocol):
        deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            super().connection_made(transport)  # type: ignore[arg-type]
            self.arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            super().connection_lost(exc)

        def arm(self) -> None:
            """Give the client ``request_timeout`` seconds, from now, to send its next request."""
            if self.deadline is not None:
                self.deadline.cancel()
            self.deadline = self.loop.call_later(request_timeout, self.enforce)

        def enforce(self) -> None:
            """Close the connection if the request is still not all there."""
            if self.conn.their_state is not h11.DONE and not self.transport.is_closing():
                self.transport.close()

    return PromptClients


def serve(config: Config, settings: ServeSettings, console: Console | None = None) -> None:
    """Serve until interrupted. Refuses a non-loopback address without a token."""
    token = settings.bearer_token()
    check_bind(settings.host, token)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    if console is not None:
        console.print("starting CLAIRE: opening the index, the embedder and the job store (the first start on a "
                      "new data folder can take a minute)…")
    # What can fail at start (a busy port, no API key, an unknown index) fails here, as one clear
    # error, rather than inside the server's start-up.
    _check_port(settings.host, settings.port)
    JobStore(settings.store_path()).close()  # a file that is not a store, or a damaged one: said here, in one line
    asyncio.run(ChatClient.from_config(config.llm).aclose())
    if settings.watch:
        patrol_source(config)  # a missing recording or a bad title filter, said before the server starts
    retriever = open_retrieval(config)
    app = create_app(config, settings, retriever=retriever)
    server = uvicorn.Server(uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                                           server_header=False, timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE_S,
                                           http=prompt_clients_protocol(settings.request_timeout)))

    def announce() -> None:  # the address only once the port accepts connections
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started and console is not None:
            console.print(f"CLAIRE on http://{host}:{settings.port}/  (API docs at /docs; jobs in {settings.store_path()})"
                          + ("; token required" if token else ""))

    threading.Thread(target=announce, name="claire-serve-ready", daemon=True).start()
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down for (not always in time to land here)
        pass
    except (OSError, SystemExit) as error:  # uvicorn exits when it cannot bind
        raise ClaireError(f"cannot listen on {settings.host}:{settings.port}: "
                          f"{getattr(error, 'strerror', None) or 'the address is in use or not this machine’s'}") from None
    finally:
        retriever.close()
    if server.should_exit:  # stopped by a signal after a clean shutdown: the command exits as interrupted (130)
        raise KeyboardInterrupt


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as error:
            raise ClaireError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None


class ServerThread:
    """The app on 127.0.0.1 in a background thread; ``url`` once started. Stopping it runs the
    app's shutdown (jobs in flight stay unfinished in the store, as after a restart)."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0, limit_concurrency: int | None = None,
                 request_timeout: float = 30.0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", backlog=1024, timeout_graceful_shutdown=2,
                                limit_concurrency=limit_concurrency, timeout_keep_alive=KEEP_ALIVE_S,
                                http=prompt_clients_protocol(request_timeout))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self, timeout: float = 120) -> "ServerThread":
        """Start serving and wait until the server accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the CLAIRE web app did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Ask the server to finish, wait for its thread and free the port."""
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
