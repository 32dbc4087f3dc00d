"""The plain chat-completions request of an OpenAI-compatible endpoint, posted over aiohttp.

langchain-openai's ``ChatOpenAI`` builds the request (messages, tools, sampling) and reads the
answer (messages, tool calls, usage); in between, the OpenAI SDK builds an HTTP request object
with its own header and URL machinery and reads the answer into typed objects. With many claims
in flight on one event loop that in-between costs more CPU than everything else the call does
(`claire bench llm`, `claire bench eval`), so :class:`ChatCompletionsPoster` posts the JSON
payload directly: the same URL, headers and key the SDK client would send (read from that client
once), over one aiohttp session per event loop. Failures keep the shapes that
``chat_models.classify_error`` reads: an HTTP error has ``status_code``, ``response.headers`` and
the JSON ``body``; timeouts and refused connections are aiohttp's own exceptions.

It serves the plain request only: Azure deployments, the Responses API, structured output,
streaming, default query parameters and endpoints reached through a proxy (``HTTPS_PROXY``,
``ALL_PROXY`` and the like) all stay with the SDK (:func:`serves` says which).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
import orjson

MAX_CONNECTIONS = 512


class EndpointStatusError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, status_code: int, headers: Any, body: Any):
        message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
        super().__init__(f"HTTP {status_code}: {message or str(body)[:200]}")
        self.status_code = status_code
        self.response = _Response(headers)
        self.body = body


class _Response:
    def __init__(self, headers: Any):
        self.headers = headers


def serves(client: Any) -> bool:
    """Whether the SDK client's requests are plain enough to post here: OpenAI's own client class
    (not Azure's), no default query parameters, no proxy from the environment for its URL."""
    from openai import AsyncOpenAI, AsyncAzureOpenAI

    if not isinstance(client, AsyncOpenAI) or isinstance(client, AsyncAzureOpenAI) or client.default_query:
        return False
    url = urlsplit(str(client.base_url))
    proxies = getproxies()
    return not ((proxies.get(url.scheme) or proxies.get("all")) and not proxy_bypass(url.hostname or ""))


class ChatCompletionsPoster:
    """Posts chat-completions payloads for one SDK client (its base URL, headers and timeout)."""

    def __init__(self, client: Any):
        self.url = f"{client.base_url}chat/completions"
        headers = {**client.auth_headers, **client.default_headers}  # an Authorization the caller set wins, as in the SDK
        self.headers = {key: value for key, value in headers.items() if isinstance(value, str)}  # unset ones are markers
        self.timeout = _timeout(client.timeout)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_here(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # a session belongs to the loop it was made on (a command may run several loops)
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS), timeout=self.timeout)
            self._loop = loop
        return self._session

    async def post(self, payload: dict[str, Any], headers: dict[str, str] | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        """The endpoint's JSON answer to ``payload``."""
        body = _json_bytes(payload)
        options: dict[str, Any] = {"timeout": _timeout(timeout)} if timeout is not None else {}
        async with self._session_here().post(self.url, data=body, headers={**self.headers, **(headers or {})},
                                             **options) as response:
            data = await response.read()
            if response.status >= 400:
                try:
                    detail: Any = orjson.loads(data)
                except ValueError:
                    detail = data.decode("utf-8", "replace")
                raise EndpointStatusError(response.status, response.headers, detail)
        return orjson.loads(data)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


def _json_bytes(payload: dict[str, Any]) -> bytes:
    """The payload as UTF-8 JSON (orjson: a verifier request with its passages is tens of KB, and
    ``json`` costs several times more CPU); values orjson refuses go through ``json``."""
    try:
        return orjson.dumps(payload)
    except TypeError:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _timeout(value: Any) -> aiohttp.ClientTimeout:
    """The SDK's timeout (seconds, or an httpx Timeout) as aiohttp's: connect and read limits."""
    if isinstance(value, (int, float)):
        return aiohttp.ClientTimeout(total=None, sock_connect=min(float(value), 10.0), sock_read=float(value))
    read = getattr(value, "read", None)
    connect = getattr(value, "connect", None)
    return aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read)
