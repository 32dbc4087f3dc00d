"""The web app's guards, as ASGI middleware: bearer token, request size limit, CORS for Wikipedia
pages (with Chrome's private-network preflight) and browser security headers for the page.

Order matters and is set by :func:`install`: CORS answers preflights before the token is asked
for, the size limit runs before any body is parsed, and every JSON error is one sentence in
``{"detail": ...}``.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
from typing import Any, Iterable

from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from claire.errors import ConfigError

# Every language edition, mobile site and sister wiki domain of Wikipedia, over https only.
WIKIPEDIA_ORIGINS = r"https://([a-z0-9-]+\.)*wikipedia\.org"

PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (localhost or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose the API beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who can reach it could spend your LLM budget. "
            "Give --token (or CLAIRE_SERVE_TOKEN), or keep the default --host 127.0.0.1"
        )


async def _json(send: Send, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class TokenGuard:
    """With a token set, every /api/ request (except CORS preflights) must carry ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.token and scope["type"] == "http" and scope["path"].startswith("/api/")
                and scope["method"] != "OPTIONS"):
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), self.token.encode()):
                await _json(send, 401, "this server needs its token: send the header 'Authorization: Bearer TOKEN'",
                            [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        message = f"the request body is larger than the server's limit of {self.limit:,} bytes"
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _json(send, 413, message)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _json(send, 413, message)
                return
            chunks.append(chunk)
            if not event.get("more_body"):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class PageHeaders:
    """Security headers on every response; a strict Content-Security-Policy on the app's own page.
    Answers Chrome's private-network preflight for allowed origins (a Wikipedia tab calling a
    server on this machine)."""

    def __init__(self, app: ASGIApp, origin_allowed: Any):
        self.app = app
        self.origin_allowed = origin_allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        request_headers = dict(scope["headers"])
        private_network = (scope["method"] == "OPTIONS" and request_headers.get(b"access-control-request-private-network") == b"true"
                           and self.origin_allowed(request_headers.get(b"origin", b"").decode("latin-1")))

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
                if not path.startswith(("/docs", "/redoc", "/api/")) and path != "/openapi.json":
                    headers += [(b"content-security-policy", PAGE_CSP.encode()), (b"x-frame-options", b"DENY")]
                if private_network:
                    headers.append((b"access-control-allow-private-network", b"true"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, wrapped)


def install(app: Any, *, token: str | None, max_body: int, extra_origins: list[str], own_origins: list[str],
            hosts: list[str] | None = None) -> None:
    """Wrap ``app`` (a FastAPI app) in the guards, outermost last. ``hosts``: the names a request's
    ``Host`` header may give (others get 400, which stops DNS rebinding); None admits any."""
    exact = set(own_origins) | set(extra_origins)
    pattern = re.compile(WIKIPEDIA_ORIGINS + r"$")

    def origin_allowed(origin: str) -> bool:
        return origin in exact or bool(pattern.fullmatch(origin))

    app.add_middleware(TokenGuard, token=token)
    app.add_middleware(BodyLimit, limit=max_body)
    app.add_middleware(CORSMiddleware, allow_origins=sorted(exact), allow_origin_regex=WIKIPEDIA_ORIGINS,
                       allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
                       max_age=600)
    app.add_middleware(PageHeaders, origin_allowed=origin_allowed)
    if hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)
