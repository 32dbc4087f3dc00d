"""Which LangChain chat model a configuration names, built with its public parameters.

- a bare ``llm.model`` (``gpt-4o``, ``qwen2.5:7b``) on OpenAI or an OpenAI-compatible
  ``llm.base_url`` (vLLM, llama.cpp server, LM Studio, Ollama's /v1): langchain-openai's
  ``ChatOpenAI``, on the OpenAI SDK's aiohttp transport (the one client for every such endpoint:
  ``claire bench eval --concurrency 64 --latency 2`` keeps it above 0.9 of ideal);
- ``llm.provider = "azure"``: ``AzureChatOpenAI``;
- ``llm.provider = "local"``: a GGUF file in-process (:class:`claire.llm.local.LlamaCppChatModel`);
- a provider-qualified name (``anthropic:...``, ``ollama:...``): LangChain's ``init_chat_model``.

Every model gets the LLM cache (``cache=``), ``max_retries=0`` (``ChatClient`` owns retrying) and
the configured timeout, temperature and answer length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.language_models import BaseChatModel

from claire.settings import LLMConfig
from claire.errors import LLMError
from claire.llm.cache import SQLiteChatCache
from claire.llm.providers import EXTRAS, MISSING_API_KEY, PROVIDER_PACKAGES, needs_api_key, provider_of, split_model

OPENAI_URL = "https://api.openai.com/v1"


@dataclass
class ChatModelSetup:
    """A configured chat model and what the rest of the LLM layer needs to know about it."""

    model: BaseChatModel
    provider: str  # openai, azure_openai, local, anthropic, ...
    endpoint: str  # the base URL (or provider name) in messages and cache keys
    model_name: str  # the model name without a provider prefix
    cache: SQLiteChatCache | None
    sends_headers: bool  # per-call HTTP headers (the prompt's name, for test servers) can be sent
    closers: tuple[Any, ...] = ()  # HTTP clients to close with the model
    cache_breakpoints: bool = False  # mark the end of each prompt's fixed part for the provider's prompt cache

    async def aclose(self) -> None:
        """Close the HTTP clients and the cache this model opened."""
        for closer in self.closers:
            await closer()
        if self.cache is not None:
            self.cache.close()


def _cache(config: LLMConfig, endpoint: str) -> SQLiteChatCache | None:
    return SQLiteChatCache(config.resolved_cache_path(), endpoint=endpoint, refresh=config.refresh_cache) if config.cache else None


def _api_key(config: LLMConfig) -> str:
    if needs_api_key(config):
        raise LLMError(MISSING_API_KEY)
    return config.resolved_api_key() or "unused"  # local OpenAI-compatible servers usually ignore the key


def _openai(config: LLMConfig, name: str, azure: bool) -> ChatModelSetup:
    api_key = _api_key(config)
    if azure and not config.base_url:
        raise LLMError("Azure OpenAI needs llm.base_url set to your resource endpoint (https://NAME.openai.azure.com)")
    endpoint = config.base_url or OPENAI_URL
    cache = _cache(config, endpoint)
    provider = "azure_openai" if azure else "openai"
    from langchain_openai import AzureChatOpenAI, ChatOpenAI
    from openai import DefaultAioHttpClient
    import httpx2

    # The SDK's aiohttp-based client: with many requests in flight the default httpx pool spends
    # several times more CPU per request on the event loop.
    http = DefaultAioHttpClient(timeout=httpx2.Timeout(config.timeout, connect=min(config.timeout, 10.0)),
                                limits=httpx2.Limits(max_connections=512, max_keepalive_connections=64))
    common: dict[str, Any] = dict(api_key=api_key, temperature=config.temperature, max_tokens=config.max_tokens,
                                  timeout=config.timeout, max_retries=0, streaming=config.stream, stream_usage=True,
                                  http_async_client=http, cache=cache)
    if azure:
        model: BaseChatModel = AzureChatOpenAI(azure_endpoint=config.base_url, api_version=config.azure_api_version,
                                               azure_deployment=name, model=name, **common)
    else:
        model = ChatOpenAI(model=name, base_url=config.base_url, **common)
    return ChatModelSetup(model, provider, endpoint, name, cache, True, (http.aclose,))


def _local(config: LLMConfig) -> ChatModelSetup:
    from claire.llm.local import LlamaCppChatModel

    if not config.local_model_path:
        raise LLMError("the local provider needs llm.local_model_path (a .gguf file)")
    endpoint = f"llama.cpp:{config.local_model_path}"
    cache = _cache(config, endpoint)
    model = LlamaCppChatModel(model_path=str(config.local_model_path), n_ctx=config.local_n_ctx,
                              temperature=config.temperature, max_tokens=config.max_tokens, cache=cache)
    return ChatModelSetup(model, "local", endpoint, config.model, cache, False)


def _other(config: LLMConfig, provider: str, name: str) -> ChatModelSetup:
    from langchain.chat_models import init_chat_model

    endpoint = config.base_url or provider
    cache: BaseCache | None = _cache(config, endpoint)
    kwargs: dict[str, Any] = dict(temperature=config.temperature, max_tokens=config.max_tokens,
                                  timeout=config.timeout, max_retries=0, cache=cache)
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
        if cache is not None:
            cache.close()
        package = PROVIDER_PACKAGES[provider]
        extra = EXTRAS.get(package)
        how = f"pip install 'claire[{extra}]'" if extra else f"pip install {package}"
        raise LLMError(f"llm.model '{config.model}' needs the {package} package: {how}") from None
    except Exception as error:  # the provider refused its settings (a missing key, region...)
        if cache is not None:
            cache.close()
        raise LLMError(f"cannot set up the {provider} chat model '{name}': {str(error).splitlines()[0][:200]}") from None
    # Anthropic caches a prompt prefix only up to a marked breakpoint (OpenAI and most servers do it unasked).
    return ChatModelSetup(model, provider, endpoint, name, cache, False,  # type: ignore[arg-type]
                          cache_breakpoints=provider == "anthropic")


def chat_model_from_config(config: LLMConfig) -> ChatModelSetup:
    """The LangChain chat model an ``llm`` configuration names, with its cache."""
    provider = provider_of(config)
    _, name = split_model(config.model)
    if provider == "local":
        return _local(config)
    if provider in ("openai", "azure_openai"):
        return _openai(config, name, azure=provider == "azure_openai")
    return _other(config, provider, name)
