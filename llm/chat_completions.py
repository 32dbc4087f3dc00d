"""A lean LangChain chat model for plain OpenAI-compatible Chat Completions endpoints.

:class:`ChatCompletionsModel` is a LangChain chat model like any other — built through LangChain's
documented extension point for new models (a ``BaseChatModel`` that answers ``_agenerate``), used
through ``ainvoke``, ``bind_tools``, callbacks and the cache — that posts the request's JSON over
aiohttp and reads the JSON answer into an ``AIMessage`` with LangChain's own converters.

Why it exists beside ``ChatOpenAI``: langchain-openai sends each request through the OpenAI SDK,
which walks the whole payload against its parameter types before sending it, builds a typed
response object, and converts it back on a worker thread. With many claims in flight on one event
loop, that costs about 3 ms of CPU per call more than this model does (``claire bench llm`` prints
both), which is what limits a batch run on a small machine. ``llm.openai_client`` chooses:
``auto`` takes this model for a plain endpoint (no proxy from the environment, no streaming, not
Azure) and ``ChatOpenAI`` otherwise; ``chat_openai`` always takes ``ChatOpenAI``.

Failures keep the shapes :func:`claire.llm.client.classify_error` reads: an HTTP error has
``status_code``, ``response.headers`` and the JSON ``body``; timeouts and refused connections are
aiohttp's own exceptions; an answer that is not a chat completion is an :class:`UnreadableAnswer`. A body
that orjson refuses only because a model wrote half a surrogate pair (``"\\ud800"``) or bytes
that are not UTF-8 is read by the standard library instead, with U+FFFD in their place. The
prompt tokens an endpoint served from its prefix cache (``prompt_tokens_details.cached_tokens``)
go into the answer's ``usage_metadata`` as LangChain's ``input_token_details["cache_read"]``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
import orjson
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from claire.files import valid_text
from claire.llm.usage import CallTokens

MAX_CONNECTIONS = 512


class UnreadableAnswer(ValueError):
    """The endpoint answered 200 with a body that is not a chat completion (retried: a garbled answer)."""


class EndpointStatusError(Exception):
    """The endpoint answered with an HTTP error status (``status_code``, ``response.headers``, ``body``)."""

    def __init__(self, status_code: int, headers: Any, body: Any):
        inner = body.get("error") if isinstance(body, dict) else None
        message = inner.get("message") if isinstance(inner, dict) else None
        super().__init__(f"HTTP {status_code}: {message or str(body)[:200]}")
        self.status_code = status_code
        self.response = _Headers(headers)
        self.body = body


class _Headers:
    def __init__(self, headers: Any):
        self.headers = headers


def uses_proxy(base_url: str) -> bool:
    """Whether the environment routes requests for ``base_url`` through a proxy."""
    url = urlsplit(base_url)
    proxies = getproxies()
    return bool((proxies.get(url.scheme) or proxies.get("all")) and not proxy_bypass(url.hostname or ""))


def chat_result(data: Any, model: str) -> ChatResult:
    """A chat-completions JSON answer as LangChain's ChatResult (tool calls parsed, bad ones kept
    as invalid tool calls, usage and finish reason in the message's metadata)."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
        calls, invalid = [], []
        for raw in message.get("tool_calls") or []:
            try:
                calls.append(parse_tool_call(raw, return_id=True))
            except Exception as error:  # arguments that are not JSON: kept, so the agent can say what went wrong
                invalid.append(make_invalid_tool_call(raw, str(error)))
        answer = AIMessage(
            content=content or "",
            tool_calls=[call for call in calls if call is not None],
            invalid_tool_calls=invalid,
            usage_metadata=usage_metadata(data.get("usage")),
            response_metadata={"model_name": data.get("model") or model, "finish_reason": choice.get("finish_reason")},
            # what some servers send beside the content: a refusal (OpenAI) and the model's reasoning
            # (vLLM, llama.cpp, DeepSeek), kept as LangChain's ChatOpenAI keeps them
            additional_kwargs={key: message[key] for key in ("refusal", "reasoning_content") if message.get(key)},
            id=data.get("id"),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise UnreadableAnswer(f"not a chat completion ({error!r})") from None
    return ChatResult(generations=[ChatGeneration(message=answer)])


def usage_metadata(usage: Any) -> UsageMetadata:
    """A chat completion's ``usage`` as LangChain's UsageMetadata, with the prompt tokens served
    from the endpoint's prompt cache as ``input_token_details["cache_read"]``."""
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    raw = {"input_tokens": usage.get("prompt_tokens"), "output_tokens": usage.get("completion_tokens"),
           "input_token_details": {"cache_read": details.get("cached_tokens") if isinstance(details, dict) else None}}
    tokens = CallTokens.from_metadata(raw)  # impossible counts dropped or clamped (and noted), the answer kept
    metadata = UsageMetadata(input_tokens=tokens.prompt, output_tokens=tokens.completion,
                             total_tokens=tokens.prompt + tokens.completion)
    if tokens.cache_read:
        metadata["input_token_details"] = {"cache_read": tokens.cache_read}
    return metadata


def read_body(data: bytes) -> Any:
    """The JSON of an answer's body. orjson reads it, except what orjson refuses but is still a
    chat completion: half a surrogate pair in an escape (``"\\ud800"``, which some models write)
    or bytes that are not UTF-8; those are read by the standard library, with U+FFFD in their
    place, so the answer's text reaches the caller."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return valid_text(json.loads(data.decode("utf-8", "replace")))
    except ValueError:
        raise UnreadableAnswer("the body is not JSON") from None


def tool_choice_value(choice: Any) -> Any:
    """An OpenAI ``tool_choice`` from LangChain's forms: "auto" / "none" / "required" / a tool name."""
    if choice in (None, "auto", "none", "required") or isinstance(choice, dict):
        return choice
    if choice in ("any", True):
        return "required"
    return {"type": "function", "function": {"name": str(choice)}}


def bind_openai_tools(model: BaseChatModel, tools: Sequence[Any], tool_choice: Any,
                      kwargs: dict[str, Any]) -> Runnable[LanguageModelInput, AIMessage]:
    """``model`` bound to OpenAI tool schemas (and a tool choice) for every call."""
    schemas = [convert_to_openai_tool(tool) for tool in tools]
    if tool_choice is not None:
        kwargs["tool_choice"] = tool_choice_value(tool_choice)
    return model.bind(tools=schemas, **kwargs)


class ChatCompletionsModel(BaseChatModel):
    """An OpenAI-compatible endpoint's ``/chat/completions``, posted over aiohttp."""

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field(alias="model")
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0
    default_headers: dict[str, str] = Field(default_factory=dict)

    _sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = PrivateAttr(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "claire-chat-completions"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with OpenAI tool schemas sent on every call."""
        return bind_openai_tools(self, tools, tool_choice, kwargs)

    # -- the request ------------------------------------------------------------------------
    def _body(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model_name, "messages": convert_to_openai_messages(messages),
                                "temperature": kwargs.pop("temperature", self.temperature), "stream": False}
        max_tokens = kwargs.pop("max_tokens", self.max_tokens)
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stop:
            body["stop"] = stop
        body.update({key: value for key, value in kwargs.items() if value is not None})
        return body

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key is not None:
            headers["Authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        headers.update(self.default_headers)  # an Authorization the caller set wins
        headers.update(extra or {})
        return headers

    def _url(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            # a session belongs to the loop it was made on (a command may run several loops)
            for other in [known for known in self._sessions if known.is_closed()]:
                del self._sessions[other]
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, 10.0), sock_read=self.timeout)
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS), timeout=timeout)
            self._sessions[loop] = session
        return session

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        headers = self._headers(kwargs.pop("extra_headers", None))
        body = _json_bytes(self._body(messages, stop, kwargs))
        async with self._session().post(self._url(), data=body, headers=headers) as response:
            data = await response.read()
            if response.status >= 400:
                raise EndpointStatusError(response.status, response.headers, _json_or_text(data))
        return chat_result(read_body(data), self.model_name)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        import httpx

        headers = self._headers(kwargs.pop("extra_headers", None))
        body = _json_bytes(self._body(messages, stop, kwargs))
        response = httpx.post(self._url(), content=body, headers=headers, timeout=self.timeout)
        if response.status_code >= 400:
            raise EndpointStatusError(response.status_code, response.headers, _json_or_text(response.content))
        return chat_result(read_body(response.content), self.model_name)

    async def aclose(self) -> None:
        """Close the HTTP session this event loop opened."""
        loop = asyncio.get_running_loop()
        session = self._sessions.pop(loop, None)
        if session is not None and not session.closed:
            await session.close()


def _json_bytes(payload: dict[str, Any]) -> bytes:
    """The payload as UTF-8 JSON (orjson; what it refuses, such as lone surrogates, goes through ``json``)."""
    try:
        return orjson.dumps(payload)
    except TypeError:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8", "replace")


def _json_or_text(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace")
