"""A scripted chat backend for unit tests, and :func:`scripted_client`, an ``LLMClient`` over it.

The backend answers from a list (in order) or from a function of the request, so tests drive the
real ``LLMClient`` (retries, cache, accounting) without a server. Tests that cross the HTTP
boundary use :mod:`claire.testing.mock_openai` instead.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from claire.agent.llm import LLMClient
from claire.agent.llm_backends import ChatRequest, ChatResponse
from claire.errors import LLMError

Script = Callable[[ChatRequest], "ChatResponse | str | Exception"]


class ScriptedBackend:
    """A test double: answers from a list (in order) or from a function of the request.

    Items may be a ChatResponse, a plain string (the content), or an exception to raise.
    Every request is kept in ``requests`` so tests can read what the real code sent.
    """

    name = "scripted"
    endpoint = "scripted"

    def __init__(self, script: Iterable[ChatResponse | str | Exception] | Script):
        self._fn: Script | None = script if callable(script) else None
        self._items = [] if callable(script) else list(script)
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self._fn is not None:
            item = self._fn(request)
        elif self._items:
            item = self._items.pop(0)
        else:
            raise LLMError("the scripted model has no more answers")
        if isinstance(item, Exception):
            raise item
        if isinstance(item, str):
            item = ChatResponse(content=item)
        if not item.prompt_tokens:
            item.prompt_tokens = sum(len(str(m.get("content") or "")) for m in request.messages) // 4
            item.completion_tokens = item.completion_tokens or max(len(item.content) // 4, 1)
        item.model = item.model or request.model
        return item

    async def aclose(self) -> None:
        return None


def scripted_client(script: Iterable[ChatResponse | str | Exception] | Script, **kwargs: Any) -> LLMClient:
    """An :class:`LLMClient` over a :class:`ScriptedBackend`; ``kwargs`` go to the client
    (model defaults to ``"scripted"``, retries do not wait)."""
    kwargs.setdefault("model", "scripted")
    kwargs.setdefault("retry_base_wait", 0.0)
    return LLMClient(ScriptedBackend(script), **kwargs)
