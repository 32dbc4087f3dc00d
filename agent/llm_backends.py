"""The chat request/response types and the backend that is not a LangChain model: in-process
llama.cpp (LangChain chat models are in ``agent.chat_models``; the scripted test double is in
``claire.testing.scripted``).

A backend turns a :class:`ChatRequest` into a :class:`ChatResponse` and reports failures as
:class:`TransientLLMError` (worth retrying: 429, 5xx, timeouts, connection errors, garbled
answers) or :class:`claire.errors.LLMError` (retrying will not help: bad key, unknown model).
Retries, caching, concurrency and accounting live one level up, in ``agent.llm``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from claire.errors import LLMError
from claire.retrying import TransientError

PROMPT_HEADER = "X-Claire-Prompt"
"""The HTTP header that names the prompt template a request was rendered from (``verifier``,
``verifier.feverous``); sent to OpenAI-compatible endpoints, where test servers read it."""


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
    prompt_id: str | None = None  # the template the messages came from; not part of the cache key

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


class TransientLLMError(TransientError):
    """An LLM call worth retrying; ``retry_after`` is the server's requested wait in seconds."""


class ChatBackend(Protocol):
    name: str
    endpoint: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


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
