"""The LLM client every system uses: retries, a process-wide concurrency limit, a response
cache and usage accounting around one backend (see ``agent.llm_backends``).

``LLMClient.chat(messages, tools=...)`` is the only call the rest of CLAIRE makes. Retries use
tenacity with exponential backoff and jitter, honour ``Retry-After``, and end in a clear
:class:`claire.errors.LLMError`; the SDK's own retries are off so nothing is retried twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from claire.agent.llm_backends import (
    ChatBackend,
    ChatRequest,
    ChatResponse,
    LlamaCppBackend,
    TransientLLMError,
)
from claire.agent.chat_models import LangChainBackend
from claire.agent.llm_cache import ResponseCache, cache_key
from claire.agent.tokens import TokenCounter, known_context_window
from claire.agent.usage import Usage, record_call
from claire.config import LLMConfig
from claire.errors import LLMError
from claire.retrying import async_retrying

MAX_RETRY_AFTER = 120.0


class LLMClient:
    def __init__(
        self,
        backend: ChatBackend,
        *,
        model: str,
        temperature: float = 0.0,
        max_tokens: int = 1500,
        timeout: float = 60.0,
        max_attempts: int = 6,
        max_concurrency: int = 8,
        cache: ResponseCache | None = None,
        refresh_cache: bool = False,
        retry_base_wait: float = 0.5,
        retry_max_wait: float = 30.0,
        tool_calling: str = "native",
        context_window: int | None = None,
    ):
        self.backend = backend
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_concurrency = max_concurrency
        self.cache = cache
        self.refresh_cache = refresh_cache
        self.retry_base_wait = retry_base_wait
        self.retry_max_wait = retry_max_wait
        self.tool_calling = tool_calling
        self.context_window = context_window or known_context_window(model)
        self.counter = TokenCounter(model)
        self.total = Usage()
        # Set when a call gave up because the endpoint could not be reached: later calls try once
        # instead of a full retry cycle each, until one gets through again.
        self.endpoint_down = False
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    @classmethod
    def from_config(cls, config: LLMConfig, *, backend: ChatBackend | None = None) -> "LLMClient":
        if backend is None:
            if config.provider == "local":
                if not config.local_model_path:
                    raise LLMError("the local provider needs llm.local_model_path (a .gguf file)")
                backend = LlamaCppBackend(str(config.local_model_path), n_ctx=config.local_n_ctx)
            else:
                backend = LangChainBackend.from_config(config)
        cache = ResponseCache(config.resolved_cache_path()) if config.cache else None
        return cls(
            backend,
            model=config.model,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            timeout=config.timeout,
            max_attempts=config.max_attempts,
            max_concurrency=config.max_concurrency,
            cache=cache,
            refresh_cache=config.refresh_cache,
            retry_base_wait=config.retry_base_wait,
            retry_max_wait=config.retry_max_wait,
            tool_calling=config.tool_calling,
            context_window=config.context_window or (config.local_n_ctx if config.provider == "local" else None),
        )

    def count_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Prompt tokens of a request for this client's model (exact for OpenAI models, else a safe estimate)."""
        return self.counter.messages(messages, tools)

    def prompt_budget(self, max_tokens: int | None = None) -> int:
        """The most prompt tokens a call may use: the context window less room for the answer
        (``max_tokens``) and a small margin for the server's own chat formatting."""
        answer = max_tokens or self.max_tokens
        margin = max(64, self.context_window // 50)
        return max(self.context_window - answer - margin, 256)

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            self._semaphores = {l: s for l, s in self._semaphores.items() if not l.is_closed()}
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return semaphore

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        use_cache: bool = True,
    ) -> ChatResponse:
        """One chat completion, retried on transient failures, cached, and accounted. Messages
        rendered by the prompt library carry their template's name, which goes with the request
        (``ChatRequest.prompt_id``, the ``X-Claire-Prompt`` header over HTTP)."""
        request = ChatRequest(
            model=self.model,
            messages=messages,
            tools=tools or None,
            tool_choice=tool_choice,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=max_tokens or self.max_tokens,
            timeout=self.timeout,
            prompt_id=getattr(messages, "prompt_id", None) or None,
        )
        key = (cache_key(request.cache_fields(self.backend.name, self.backend.endpoint))
               if self.cache is not None and use_cache else None)
        if key and not self.refresh_cache:
            hit = await self.cache.get(key)  # type: ignore[union-attr]
            if hit is not None:
                response = ChatResponse.from_dict(hit)
                response.cached = True
                self._account(response)
                return response
        response = await self._call_with_retries(request)
        if key:
            await self.cache.put(key, self.model, response.to_dict())  # type: ignore[union-attr]
        self._account(response)
        return response

    async def _call_with_retries(self, request: ChatRequest) -> ChatResponse:
        attempts = 1 if self.endpoint_down else self.max_attempts
        retrying = async_retrying(attempts, base=self.retry_base_wait, max_wait=self.retry_max_wait,
                                  cap=MAX_RETRY_AFTER)
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._semaphore():
                        response = await self.backend.complete(request)
                    self.endpoint_down = False
                    if not response.content.strip() and not response.tool_calls:
                        raise TransientLLMError("the model returned an empty answer")
            return response
        except TransientLLMError as error:
            hint = ""
            if "connect" in str(error):
                self.endpoint_down = True
                hint = "; check that the server is running, or set OPENAI_BASE_URL / llm.base_url"
            raise LLMError(
                f"LLM call to {self.backend.endpoint} failed after {attempts} attempt(s): {error}{hint}"
            ) from None

    def _account(self, response: ChatResponse) -> None:
        model = response.model or self.model
        self.total.record(model, response.prompt_tokens, response.completion_tokens, response.cached)
        record_call(model, response.prompt_tokens, response.completion_tokens, response.cached)

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.cache is not None:
            self.cache.close()
