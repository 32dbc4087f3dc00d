"""The server against slow or partial connections: a client that never finishes its request is
disconnected, and the others are served meanwhile."""

from __future__ import annotations

import socket
import time

import httpx
from fastapi import FastAPI, Request

from claire.web.serve import ServerThread


def test_a_client_that_never_finishes_its_request_is_disconnected_and_others_are_served():
    app = FastAPI()

    @app.get("/ping")
    async def ping() -> dict:
        return {"ok": True}

    @app.post("/echo")
    async def echo(request: Request) -> dict:
        return {"bytes": len(await request.body())}

    with ServerThread(app, request_timeout=0.5) as server:
        stalled = []
        for partial in (b"", b"GET /ping HTTP/1.1\r\nHost: x\r\n",
                        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"):
            connection = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            connection.sendall(partial)
            stalled.append(connection)
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/ping").json() == {"ok": True} and client.post("/echo", content=b"x" * 10).json() == {"bytes": 10}
            started = time.monotonic()
            for connection in stalled:
                assert connection.recv(1024) == b""  # closed by the server (a socket timeout otherwise)
                connection.close()
            assert time.monotonic() - started < 5
            time.sleep(1.0)  # a kept-alive connection that was answered is not cut by the request timeout
            assert client.get("/ping").json() == {"ok": True}
