"""LangChain chat models for CLAIRE: which model a configuration names, and one chat request
answered by it.

``llm.model`` may be provider-qualified (``anthropic:claude-sonnet-4-5``, ``ollama:qwen2.5``,
``azure_openai:my-deployment``, any provider LangChain's ``init_chat_model`` knows, each installed
as an optional extra); a bare name (``gpt-4o``, ``qwen2.5:7b``) goes to an OpenAI-compatible
endpoint through langchain-openai's ``ChatOpenAI`` (OpenAI itself, or ``llm.base_url``: vLLM,
llama.cpp server, LM Studio, Ollama's /v1). :class:`LangChainBackend` turns one
:class:`ChatRequest` into a :class:`ChatResponse`: tools go through ``bind_tools``, errors are
sorted into retryable (:class:`TransientLLMError`, with the server's Retry-After) and final
(:class:`claire.errors.LLMError`). Retries, cache, concurrency and accounting stay in ``agent.llm``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, convert_to_messages

from claire.agent.llm_backends import PROMPT_HEADER, ChatRequest, ChatResponse, ToolCall, TransientLLMError
from claire.agent.openai_http import ChatCompletionsPoster, serves
from claire.config import LLMConfig
from claire.errors import LLMError
from claire.retrying import retry_after

# Providers LangChain's init_chat_model can build (the prefix before ":" in llm.model), with the
# pip package each needs. A prefix not listed here is part of the model name ("qwen2.5:7b").
PROVIDER_PACKAGES: dict[str, str] = {
    "openai": "langchain-openai",
    "azure_openai": "langchain-openai",
    "anthropic": "langchain-anthropic",
    "ollama": "langchain-ollama",
    "google_genai": "langchain-google-genai",
    "google_vertexai": "langchain-google-vertexai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "mistralai": "langchain-mistralai",
    "groq": "langchain-groq",
    "fireworks": "langchain-fireworks",
    "together": "langchain-together",
    "deepseek": "langchain-deepseek",
    "cohere": "langchain-cohere",
    "xai": "langchain-xai",
    "huggingface": "langchain-huggingface",
    "nvidia": "langchain-nvidia-ai-endpoints",
    "openrouter": "langchain-openrouter",
}
EXTRAS = {"langchain-anthropic": "anthropic", "langchain-ollama": "ollama", "langchain-google-genai": "google",
          "langchain-aws": "bedrock", "langchain-mistralai": "mistral"}


def split_model(model: str) -> tuple[str | None, str]:
    """``"anthropic:claude-x"`` -> ("anthropic", "claude-x"); a bare or unknown prefix -> (None, model)."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix in PROVIDER_PACKAGES and rest:
        return prefix, rest
    return None, model


def provider_of(config: LLMConfig) -> str:
    """The provider a configuration resolves to: a model prefix wins over ``llm.provider``."""
    prefix, _ = split_model(config.model)
    if prefix:
        return prefix
    return {"azure": "azure_openai"}.get(config.provider, config.provider)


def _http_client(timeout: float) -> Any:
    """The OpenAI SDK's aiohttp-based client: with many requests in flight, the default httpx
    connection pool spends ~4 ms of CPU on each one on the event loop, aiohttp ~0.5 ms
    (``claire bench llm`` measures the layer)."""
    import httpx2
    from openai import DefaultAioHttpClient

    return DefaultAioHttpClient(
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
        limits=httpx2.Limits(max_connections=512, max_keepalive_connections=64),
    )


# Keys of a langchain-openai request payload that are options of the HTTP request, not JSON fields.
_REQUEST_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


def _inline(base: type) -> type:
    """``base`` (ChatOpenAI or AzureChatOpenAI) with a lighter path for a plain chat completion.

    langchain-openai sends each request through the SDK's typed ``create``, which walks the whole
    payload against the parameter types before sending it, builds a typed response that LangChain
    immediately turns back into a dict, and reads the answer on a worker thread. With many claims
    in flight the event loop's CPU is the bottleneck of a batch run, and that path was most of the
    LLM layer's share of it (``claire bench llm``, ``claire bench eval``). Here the same JSON
    payload goes out by :mod:`.openai_http` when the client is plain OpenAI-compatible, else by
    the SDK client's own ``post`` (Azure deployment routing, default query parameters), and the
    JSON answer goes to LangChain's own result builder. Structured output, the Responses API and
    streaming go the library's own way."""

    class Inline(base):  # type: ignore[misc, valid-type]
        _claire_poster: Any = None  # the ChatCompletionsPoster, made at the first call; False: the SDK posts

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            payload = self._get_request_payload(messages, stop=stop, **kwargs)
            if "response_format" in payload or self._use_responses_api(payload) or self.include_response_headers:
                return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
            headers, query, extra, timeout = (payload.pop(key, None) for key in _REQUEST_OPTIONS)
            body = {**payload, **(extra or {})}
            if self._claire_poster is None:
                self._claire_poster = ChatCompletionsPoster(self.root_async_client) if serves(self.root_async_client) else False
            if self._claire_poster and not query:
                return self._create_chat_result(await self._claire_poster.post(body, headers, timeout), {})
            options: dict[str, Any] = {"headers": headers} if headers else {}
            if query:
                options["params"] = query
            if timeout is not None:
                options["timeout"] = timeout
            response = await self.root_async_client.post("/chat/completions", cast_to=httpx.Response, body=body,
                                                         options=options)
            return self._create_chat_result(response.json(), {})

        # LangChain reads this method's parameters on every call; a stored signature spares the parse
        _agenerate.__signature__ = inspect.signature(_agenerate)  # type: ignore[attr-defined]

        async def aclose_transport(self) -> None:
            """Close the HTTP sessions this model opened."""
            if self._claire_poster:
                await self._claire_poster.aclose()
            client = getattr(self, "http_async_client", None)
            if callable(getattr(client, "aclose", None)):
                await client.aclose()

    Inline.__name__ = Inline.__qualname__ = f"Inline{base.__name__}"
    return Inline


def _openai_model(config: LLMConfig, name: str, azure: bool) -> tuple[BaseChatModel, str]:
    from langchain_openai import AzureChatOpenAI, ChatOpenAI

    api_key = config.resolved_api_key()
    if not api_key:
        if config.base_url and not azure:
            api_key = "unused"  # local OpenAI-compatible servers usually ignore the key
        else:
            raise LLMError(
                "no API key for the LLM endpoint: set OPENAI_API_KEY (or llm.api_key_env to the "
                "variable holding it), or point llm.base_url / OPENAI_BASE_URL at a local server"
            )
    common: dict[str, Any] = dict(
        api_key=api_key, temperature=config.temperature, max_tokens=config.max_tokens, timeout=config.timeout,
        max_retries=0, streaming=config.stream, stream_usage=True, http_async_client=_http_client(config.timeout),
    )
    if azure:
        if not config.base_url:
            raise LLMError("Azure OpenAI needs llm.base_url set to your resource endpoint (https://NAME.openai.azure.com)")
        model = _inline(AzureChatOpenAI)(azure_endpoint=config.base_url, api_version=config.azure_api_version,
                                azure_deployment=name, model=name, **common)
        return model, config.base_url
    model = _inline(ChatOpenAI)(model=name, base_url=config.base_url, **common)
    return model, config.base_url or "https://api.openai.com/v1"


def _other_model(config: LLMConfig, provider: str, name: str) -> tuple[BaseChatModel, str]:
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = dict(temperature=config.temperature, max_tokens=config.max_tokens,
                                  timeout=config.timeout, max_retries=0)
    if config.base_url:
        kwargs["base_url"] = config.base_url
    if config.api_key is not None or config.api_key_env != "OPENAI_API_KEY":
        key = config.resolved_api_key()  # otherwise the provider reads its own variable (ANTHROPIC_API_KEY, ...)
        if key:
            kwargs["api_key"] = key
    try:
        try:
            model = init_chat_model(name, model_provider=provider, **kwargs)
        except (TypeError, ValueError) as first:  # a provider without timeout/max_retries fields
            if isinstance(first, ImportError):
                raise
            for unsupported in ("max_retries", "timeout"):
                kwargs.pop(unsupported, None)
            model = init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError:
        package = PROVIDER_PACKAGES[provider]
        extra = EXTRAS.get(package)
        how = f"pip install 'claire[{extra}]'" if extra else f"pip install {package}"
        raise LLMError(f"llm.model '{config.model}' needs the {package} package: {how}") from None
    except Exception as error:  # the provider refused its settings (a missing key, region...)
        raise LLMError(f"cannot set up the {provider} chat model '{name}': {str(error).splitlines()[0][:200]}") from None
    return model, config.base_url or provider


def chat_model_from_config(config: LLMConfig) -> tuple[BaseChatModel, str, str]:
    """(LangChain chat model, provider name, endpoint label) for an ``llm`` configuration."""
    provider = provider_of(config)
    _, name = split_model(config.model)
    if provider in ("openai", "azure_openai"):
        model, endpoint = _openai_model(config, name, azure=provider == "azure_openai")
    else:
        model, endpoint = _other_model(config, provider, name)
    return model, provider, endpoint


# -- errors ------------------------------------------------------------------------------------
def _brief(error: Exception) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:200]
    return str(getattr(error, "message", None) or error)[:200]


def classify_error(error: Exception, *, endpoint: str, model: str, timeout: float) -> Exception:
    """The error to raise for a failed call: TransientLLMError (retry) or LLMError (give up).

    Provider SDKs (openai, anthropic, ...) share one shape: ``status_code`` and ``response.headers``
    on HTTP errors, and timeout / connection classes below them; both are read by shape, not by SDK.
    """
    names = {cls.__name__ for cls in type(error).__mro__}
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        response = getattr(error, "response", None)
        status = getattr(response, "status_code", None) if response is not None else None
    if isinstance(status, int):
        headers = getattr(getattr(error, "response", None), "headers", None)
        if 200 <= status < 300:  # the body of a successful answer could not be read
            return TransientLLMError(f"unparseable response from the endpoint: {_brief(error)}")
        if status == 401:
            return LLMError(f"the LLM endpoint {endpoint} rejected the API key (401): set OPENAI_API_KEY "
                            "(or llm.api_key_env, or the provider's own key variable) to a valid key")
        if status == 403:
            return LLMError(f"the LLM endpoint {endpoint} refused access (403): {_brief(error)}")
        if status == 404:
            return LLMError(f"model '{model}' was not found at {endpoint} (404: {_brief(error)}); "
                            "set --model / llm.model to a model that endpoint serves")
        if status == 429:
            return TransientLLMError("rate limited (429)", retry_after(headers))
        if status in (408, 409, 425) or status >= 500:
            return TransientLLMError(f"server error ({status})", retry_after(headers))
        return LLMError(f"the LLM endpoint answered HTTP {status}: {_brief(error)}")
    if _refused(error):
        return TransientLLMError(f"cannot connect to {endpoint}")
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError", "ReadTimeout", "ConnectTimeout"}:
        return TransientLLMError(f"no answer within {timeout:g} s (timeout)")
    if names & {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError", "NetworkError"}:
        return TransientLLMError(f"cannot connect to {endpoint}")
    if names & {"APIResponseValidationError", "JSONDecodeError", "KeyError", "IndexError", "TypeError", "ValidationError",
                "ClientPayloadError"}:
        return TransientLLMError(f"unparseable response from the endpoint: {type(error).__name__}")
    return error


def _refused(error: BaseException) -> bool:
    """Whether the connection itself failed (refused, reset, no route) somewhere down the cause
    chain: the aiohttp transport reports those as a connect *timeout*, which they are not."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if type(cause).__name__ in {"ClientConnectorError", "ClientConnectorDNSError", "ServerDisconnectedError",
                                    "ClientOSError", "ConnectionRefusedError", "ConnectionResetError"}:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


# -- one request -------------------------------------------------------------------------------
def _text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content or [])


def response_from_message(message: AIMessage, model: str) -> ChatResponse:
    """A LangChain AIMessage as CLAIRE's ChatResponse (tool arguments kept as JSON text)."""
    calls = [ToolCall(id=call.get("id") or f"call_{i}", name=call["name"], arguments=json.dumps(call.get("args") or {}))
             for i, call in enumerate(message.tool_calls or [])]
    # Arguments the model garbled stay garbled, so the controller can tell the model what went wrong.
    calls += [ToolCall(id=call.get("id") or f"call_bad_{i}", name=call.get("name") or "", arguments=call.get("args") or "")
              for i, call in enumerate(getattr(message, "invalid_tool_calls", None) or [])]
    usage = message.usage_metadata or {}
    metadata = message.response_metadata or {}
    return ChatResponse(
        content=_text(message),
        tool_calls=calls,
        prompt_tokens=int(usage.get("input_tokens") or 0),
        completion_tokens=int(usage.get("output_tokens") or 0),
        model=metadata.get("model_name") or metadata.get("model") or model,
        finish_reason=metadata.get("finish_reason") or metadata.get("stop_reason"),
    )


def _is_openai_model(model: Any) -> bool:
    """Whether ``model`` is langchain-openai's ChatOpenAI / AzureChatOpenAI (which pass
    ``extra_headers`` on to the HTTP request); other providers' SDKs may reject the argument."""
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return False
    return isinstance(model, BaseChatOpenAI)


class LangChainBackend:
    """Answers a ChatRequest with any LangChain chat model (native tools through ``bind_tools``)."""

    def __init__(self, model: BaseChatModel, *, name: str = "langchain", endpoint: str = "langchain", model_name: str = "",
                 defaults: tuple[float, int] | None = None):
        self.model = model
        self.defaults = defaults  # (temperature, max_tokens) the model was built with: only changes are sent per call
        self.name = name
        self.endpoint = endpoint
        self.model_name = model_name or getattr(model, "model_name", None) or getattr(model, "model", None) or name
        self._bound: dict[str, Any] = {}  # bind_tools once per distinct tool set
        # OpenAI-compatible models send the prompt's template name as a header (extra_headers per call).
        self.sends_prompt_header = _is_openai_model(model)

    @classmethod
    def from_config(cls, config: LLMConfig) -> "LangChainBackend":
        model, provider, endpoint = chat_model_from_config(config)
        return cls(model, name=provider, endpoint=endpoint, model_name=split_model(config.model)[1],
                   defaults=(config.temperature, config.max_tokens))

    def _runnable(self, request: ChatRequest) -> Any:
        if not request.tools:
            return self.model
        key = json.dumps([request.tools, request.tool_choice], sort_keys=True)
        bound = self._bound.get(key)
        if bound is None:
            kwargs = {"tool_choice": request.tool_choice} if request.tool_choice else {}
            try:
                bound = self.model.bind_tools(request.tools, **kwargs)
            except NotImplementedError:
                raise LLMError(f"the {self.name} chat model has no native tool calling: set llm.tool_calling = \"text\"") from None
            self._bound[key] = bound
        return bound

    async def complete(self, request: ChatRequest) -> ChatResponse:
        runnable = self._runnable(request)
        overrides: dict[str, Any] = {}
        if self.defaults is None or request.temperature != self.defaults[0]:
            overrides["temperature"] = request.temperature
        if self.defaults is None or request.max_tokens != self.defaults[1]:
            overrides["max_tokens"] = request.max_tokens
        if request.prompt_id and self.sends_prompt_header and request.prompt_id.isascii() and request.prompt_id.isprintable():
            overrides["extra_headers"] = {PROMPT_HEADER: request.prompt_id}
        try:
            message = await runnable.ainvoke(convert_to_messages(request.messages), **overrides)
        except (LLMError, TransientLLMError):
            raise
        except Exception as error:
            mapped = classify_error(error, endpoint=self.endpoint, model=self.model_name, timeout=request.timeout)
            if mapped is error:
                raise LLMError(f"the {self.name} chat model failed: {type(error).__name__}: {str(error)[:200]}") from None
            raise mapped from None
        if not isinstance(message, AIMessage):
            raise TransientLLMError(f"the chat model returned {type(message).__name__}, not an answer")
        return response_from_message(message, self.model_name)

    async def aclose(self) -> None:
        close = getattr(self.model, "aclose_transport", None)
        if close is not None:
            await close()
            return
        client = getattr(self.model, "http_async_client", None)
        if callable(getattr(client, "aclose", None)):
            await client.aclose()
