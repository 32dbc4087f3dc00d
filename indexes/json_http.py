"""JSON over HTTP to a search service (a ``claire serve`` search endpoint, the WikiChat API): one
client that posts a JSON body and reads the JSON answer, retried with the project's one retry
policy (``claire.retrying``) on dropped connections, 429 and 5xx — waiting what a ``Retry-After``
header asks — and that says clearly when the service refused a request or did not answer JSON."""

from __future__ import annotations

import time
from typing import Any, Callable

import httpx

from claire import __version__
from claire.errors import RetrievalError
from claire.retrying import RETRY_STATUSES, TransientError, retry_after, retrying


class JsonService:
    """A JSON service at ``url``; ``name`` says what it is in messages (``search server``)."""

    def __init__(self, url: str, *, name: str, timeout: float = 30.0, max_attempts: int = 4, base_wait: float = 0.5,
                 max_wait: float = 10.0, hint: str = "") -> None:
        if max_attempts < 1:
            raise RetrievalError(f"max_attempts must be at least 1 (got {max_attempts})")
        self.url = url
        self.name = name
        self.max_attempts = max_attempts
        self.base_wait = base_wait
        self.max_wait = max_wait
        self.hint = hint  # what to do when every attempt failed
        self._client = httpx.Client(timeout=timeout, headers={"User-Agent": f"claire/{__version__}"})
        self.sleep: Callable[[float], None] = time.sleep  # between attempts (tests give a clock of their own)

    def post(self, body: dict[str, Any]) -> Any:
        """The service's JSON answer to ``body``, asked again on transient failures."""
        policy = retrying(self.max_attempts, base=self.base_wait, max_wait=self.max_wait, cap=self.max_wait,
                          sleep=self.sleep)
        try:
            return policy(self._post_once, body)
        except TransientError as error:
            raise RetrievalError(f"{self.name} at {self.url} failed after {self.max_attempts} attempts ({error})"
                                 + (f"; {self.hint}" if self.hint else "")) from None

    def _post_once(self, body: dict[str, Any]) -> Any:
        try:
            response = self._client.post(self.url, json=body)
        except httpx.TransportError as error:
            raise TransientError(f"{type(error).__name__}: {error}") from None
        if response.status_code in RETRY_STATUSES:
            raise TransientError(f"HTTP {response.status_code}", retry_after(response.headers))
        if response.status_code != 200:
            try:
                detail = response.json().get("detail")
            except (ValueError, AttributeError):
                detail = None
            raise RetrievalError(f"{self.name} at {self.url} refused the request: HTTP {response.status_code}: "
                                 f"{detail or response.text[:300]}")
        try:
            return response.json()
        except ValueError:
            raise RetrievalError(f"{self.name} at {self.url} answered with something other than JSON") from None

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()
