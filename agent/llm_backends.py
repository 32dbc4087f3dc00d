"""Backends that answer one chat request: OpenAI-compatible HTTP, in-process llama.cpp, scripted.

A backend turns a :class:`ChatRequest` into a :class:`ChatResponse` and reports failures as
:class:`TransientLLMError` (worth retrying: 429, 5xx, timeouts, connection errors, garbled
answers) or :class:`claire.errors.LLMError` (retrying will not help: bad key, unknown model).
Retries, caching, concurrency and accounting live one level up, in ``agent.llm``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterable, Protocol

import httpx
import openai

from claire.errors import LLMError


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when the model's JSON is unusable."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class ChatResponse:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str | None = None
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChatResponse":
        calls = [ToolCall(**call) for call in data.get("tool_calls") or []]
        return cls(**{**data, "tool_calls": calls})


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    temperature: float = 0.0
    max_tokens: int = 1500
    timeout: float = 60.0

    def cache_fields(self, provider: str, endpoint: str) -> dict[str, Any]:
        return {
            "provider": provider,
            "endpoint": endpoint,
            "model": self.model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }


class TransientLLMError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's requested wait in seconds."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ChatBackend(Protocol):
    name: str
    endpoint: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


def _retry_after(headers: httpx.Headers | None) -> float | None:
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(float(value), 0.0)
        except ValueError:
            try:  # the HTTP-date form
                return max((parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds(), 0.0)
            except (TypeError, ValueError):
                return None
    return None


def response_from_openai_dict(data: dict[str, Any], model: str) -> ChatResponse:
    """Read an OpenAI-shaped completion (dict) into a ChatResponse; garbled shapes are transient."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        calls = [
            ToolCall(
                id=call.get("id") or f"call_{index}",
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "{}",
            )
            for index, call in enumerate(message.get("tool_calls") or [])
        ]
        usage = data.get("usage") or {}
        return ChatResponse(
            content=message.get("content") or "",
            tool_calls=calls,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=data.get("model") or model,
            finish_reason=choice.get("finish_reason"),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise TransientLLMError(f"unparseable response from the endpoint: {error!r}") from None


class OpenAIBackend:
    """OpenAI Chat Completions over HTTP (OpenAI, Azure OpenAI, vLLM, llama.cpp server, Ollama...)."""

    name = "openai"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        azure: bool = False,
        azure_api_version: str = "2024-10-21",
        stream: bool = False,
    ):
        if not api_key:
            if base_url and not azure:
                api_key = "unused"  # local OpenAI-compatible servers usually ignore the key
            else:
                raise LLMError(
                    "no API key for the LLM endpoint: set OPENAI_API_KEY (or llm.api_key_env to the "
                    "variable holding it), or point llm.base_url / OPENAI_BASE_URL at a local server"
                )
        self.stream = stream
        self.endpoint = base_url or ("azure" if azure else "https://api.openai.com/v1")
        http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=64),
        )
        if azure:
            if not base_url:
                raise LLMError("Azure OpenAI needs llm.base_url set to your resource endpoint (https://NAME.openai.azure.com)")
            self.name = "azure"
            self._client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
                api_key=api_key, azure_endpoint=base_url, api_version=azure_api_version,
                max_retries=0, timeout=timeout, http_client=http,
            )
        else:
            self._client = openai.AsyncOpenAI(
                api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout, http_client=http
            )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout,
        }
        if request.tools:
            kwargs["tools"] = request.tools
            if request.tool_choice:
                kwargs["tool_choice"] = request.tool_choice
        try:
            if self.stream:
                return await self._complete_streaming(kwargs, request.model)
            raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
            try:
                data = json.loads(raw.http_response.text)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise TransientLLMError("the endpoint sent a body that is not JSON") from None
            if not isinstance(data, dict):
                raise TransientLLMError("the endpoint sent JSON that is not a completion object")
            return response_from_openai_dict(data, request.model)
        except openai.AuthenticationError:
            raise LLMError(
                f"the LLM endpoint {self.endpoint} rejected the API key (401): set OPENAI_API_KEY "
                "(or llm.api_key_env) to a valid key"
            ) from None
        except openai.PermissionDeniedError as error:
            raise LLMError(f"the LLM endpoint {self.endpoint} refused access (403): {_brief(error)}") from None
        except openai.NotFoundError as error:
            raise LLMError(
                f"model '{request.model}' was not found at {self.endpoint} (404: {_brief(error)}); "
                "set --model / llm.model to a model that endpoint serves"
            ) from None
        except openai.RateLimitError as error:
            raise TransientLLMError("rate limited (429)", _retry_after(error.response.headers)) from None
        except openai.InternalServerError as error:
            raise TransientLLMError(
                f"server error ({error.status_code})", _retry_after(error.response.headers)
            ) from None
        except openai.APITimeoutError:
            raise TransientLLMError(f"no answer within {request.timeout:g} s (timeout)") from None
        except openai.APIConnectionError:
            raise TransientLLMError(f"cannot connect to {self.endpoint}") from None
        except openai.APIStatusError as error:
            if error.status_code in (408, 409, 425) or error.status_code >= 500:
                raise TransientLLMError(f"HTTP {error.status_code}", _retry_after(error.response.headers)) from None
            raise LLMError(f"the LLM endpoint answered HTTP {error.status_code}: {_brief(error)}") from None
        except (openai.APIResponseValidationError, json.JSONDecodeError) as error:
            raise TransientLLMError(f"unparseable response: {error}") from None

    async def _complete_streaming(self, kwargs: dict[str, Any], model: str) -> ChatResponse:
        stream = await self._client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        result = ChatResponse(model=model)
        async for chunk in stream:
            if chunk.usage:
                result.prompt_tokens = chunk.usage.prompt_tokens or 0
                result.completion_tokens = chunk.usage.completion_tokens or 0
            if chunk.model:
                result.model = chunk.model
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta.content:
                    content.append(delta.content)
                for part in delta.tool_calls or []:
                    slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": []})
                    if part.id:
                        slot["id"] = part.id
                    if part.function and part.function.name:
                        slot["name"] = part.function.name
                    if part.function and part.function.arguments:
                        slot["arguments"].append(part.function.arguments)
                if choice.finish_reason:
                    result.finish_reason = choice.finish_reason
        result.content = "".join(content)
        result.tool_calls = [
            ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments="".join(slot["arguments"]) or "{}")
            for index, slot in sorted(calls.items())
        ]
        return result

    async def aclose(self) -> None:
        await self._client.close()


def _brief(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:200]
    return str(error.message)[:200]


class LlamaCppBackend:
    """A GGUF model run in-process with llama-cpp-python (``pip install 'claire[local]'``)."""

    name = "local"

    def __init__(self, model_path: str, *, n_ctx: int = 8192, chat_format: str | None = None):
        self.model_path = str(model_path)
        try:
            import llama_cpp
        except ImportError:
            raise LLMError("the local backend needs llama-cpp-python: pip install 'claire[local]'") from None
        self.endpoint = f"llama.cpp:{model_path}"
        self.n_ctx = n_ctx
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(model_path), n_ctx=n_ctx, chat_format=chat_format or "chatml-function-calling", verbose=False
            )
        except (ValueError, OSError) as error:
            raise LLMError(f"cannot load the GGUF model {model_path}: {error} (set llm.local_model_path)") from None
        self._lock = asyncio.Lock()  # one generation at a time: llama.cpp contexts are not re-entrant

    async def complete(self, request: ChatRequest) -> ChatResponse:
        kwargs: dict[str, Any] = {
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            kwargs["tools"] = request.tools
            kwargs["tool_choice"] = request.tool_choice or "auto"
        async with self._lock:
            try:
                data = await asyncio.to_thread(self._llama.create_chat_completion, **kwargs)
            except ValueError as error:  # llama.cpp reports a prompt longer than its context this way
                raise LLMError(f"the local model could not take this prompt: {error} (raise llm.local_n_ctx, or "
                               "lower agent.docs_per_query / agent.max_steps)") from None
        return response_from_openai_dict(dict(data), request.model)

    async def aclose(self) -> None:
        return None


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
