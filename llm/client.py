"""The one client every part of CLAIRE calls its LLM through.

:class:`ChatClient` wraps the LangChain chat model of the configuration (``llm.models``) with what
a batch run needs around each call: retries with exponential backoff and jitter that honour
``Retry-After`` (the one policy in ``claire.retrying``; the SDKs' own retries are off), a
process-wide limit on calls in flight, failing fast once the endpoint is known to be down, the
prompt's template name sent as a header, and the model's context window for fitting prompts.
:meth:`ChatClient.ask` is the one "ask again when the answer cannot be read" helper.

Every answer is tidied before anyone reads it, for what real models emit: reasoning before the
answer (``<think>`` blocks) is set aside, an empty answer is tried once more and then handed on
as empty (the caller asks again or says so), a refusal is an error of its own, and an answer cut
at the token limit is marked so :meth:`ask` does not read its last, possibly cut, word. Each of
these is counted (``llm.usage.record_event``).

Answers are LangChain ``AIMessage`` objects; the cache and usage accounting hang on the chat model
itself (its ``cache`` and the callback of ``llm.usage``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Generic, Sequence, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from claire.config import LLMConfig
from claire.errors import ClaireError, LLMError, redact
from claire.llm.answers import text_of, without_cut_tail, without_reasoning
from claire.llm.cassette import Recorder
from claire.llm.errors import TransientLLMError, classify_error
from claire.llm.models import ChatModelSetup, chat_model_from_config
from claire.llm.tokens import TokenCounter, known_context_window
from claire.llm.usage import record_event
from claire.prompts import PROMPT_HEADER
from claire.retrying import async_retrying

log = logging.getLogger(__name__)

MAX_RETRY_AFTER = 120.0
PROBE_AFTER = 60.0
"""Seconds after giving up on an unresponsive endpoint before a call tries it again; calls in
between fail at once (a hanging endpoint would otherwise cost every later call its full timeout)."""
SAY_WAITING_EVERY = 15.0
"""Seconds between the notes that a call is still waiting for its answer."""
T = TypeVar("T")


class ModelRefusal(LLMError):
    """The model declined to answer (an OpenAI ``refusal``): asking again would not help."""


FollowUp = Callable[[str], Sequence[BaseMessage]]
"""Renders the message that asks again, given what was wrong: ``unreadable``, ``cut`` or ``empty``."""


def is_cut(answer: AIMessage) -> bool:
    """Whether the answer stopped at the token limit."""
    return (answer.response_metadata or {}).get("finish_reason") == "length"


def _tidied(answer: AIMessage) -> AIMessage:
    """The answer with any reasoning set aside (the text the caller reads), a refusal raised."""
    refusal = (answer.additional_kwargs or {}).get("refusal")
    text = text_of(answer)
    visible, had_reasoning = without_reasoning(text)
    if had_reasoning:
        record_event("reasoning_removed")
        answer = answer.model_copy(update={"content": visible})
    if is_cut(answer):
        record_event("cut_answer")
    if refusal and not visible.strip() and not answer.tool_calls:
        record_event("refusal")
        raise ModelRefusal(f"the model declined to answer: {str(refusal)[:200]}")
    return answer


@dataclass
class Asked(Generic[T]):
    """What :meth:`ChatClient.ask` got: the value read (None when even the second answer was
    unreadable), the text of every answer, and the prompt finally sent."""

    value: T | None
    text: str
    prompt: list[BaseMessage]
    asked: int


class ChatClient:
    """A LangChain chat model with retries, a concurrency limit and context-window arithmetic."""

    def __init__(self, setup: ChatModelSetup, *, max_tokens: int = 1500, timeout: float = 60.0, max_attempts: int = 6,
                 max_concurrency: int = 8, retry_base_wait: float = 0.5, retry_max_wait: float = 30.0,
                 tool_calling: str = "native", context_window: int | None = None, record: Path | None = None):
        self.setup = setup
        self.model: BaseChatModel = setup.model
        self.model_name = setup.model_name
        self.endpoint = setup.endpoint
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_concurrency = max_concurrency
        self.retry_base_wait = retry_base_wait
        self.retry_max_wait = retry_max_wait
        self.tool_calling = tool_calling
        self.context_window = context_window or known_context_window(setup.model_name)
        self.counter = TokenCounter(setup.model_name)
        self.recorder = Recorder(record) if record is not None else None  # llm.record: a cassette of every call
        # Set when a call gave up because the endpoint could not be reached or never answered in
        # time: later calls fail at once, and after PROBE_AFTER seconds one tries again (once),
        # until a call gets through.
        self.endpoint_down = False
        self.down_since = 0.0
        self.clock: Callable[[], float] = time.monotonic
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._bound: dict[tuple[Any, ...], Any] = {}
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # between retries (tests give a clock of their own)

    @classmethod
    def from_config(cls, config: LLMConfig, *, setup: ChatModelSetup | None = None) -> "ChatClient":
        """The client for an ``llm`` configuration (``setup``: an already built chat model)."""
        return cls(
            setup or chat_model_from_config(config),
            max_tokens=config.max_tokens, timeout=config.timeout, max_attempts=config.max_attempts,
            max_concurrency=config.max_concurrency, retry_base_wait=config.retry_base_wait,
            retry_max_wait=config.retry_max_wait, tool_calling=config.tool_calling,
            context_window=config.context_window or (config.local_n_ctx if config.provider == "local" else None),
            record=config.record,
        )

    @property
    def native_tools(self) -> bool:
        """Whether the controller's actions go as native tool calls (else as ``name(argument)`` text)."""
        return self.tool_calling == "native"

    # -- context window ----------------------------------------------------------------------
    def count_tokens(self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        """Prompt tokens of a request for this model (exact for OpenAI models, else a safe estimate)."""
        return self.counter.messages(messages, tools)

    def prompt_budget(self, max_tokens: int | None = None) -> int:
        """The most prompt tokens a call may use: the context window less room for the answer
        (``max_tokens``) and a small margin for the server's own chat formatting."""
        answer = max_tokens or self.max_tokens
        margin = max(64, self.context_window // 50)
        return max(self.context_window - answer - margin, 256)

    # -- calls ---------------------------------------------------------------------------------
    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            self._semaphores = {known: s for known, s in self._semaphores.items() if not known.is_closed()}
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return semaphore

    def _runnable(self, tools: Sequence[Any] | None, tool_choice: Any) -> Any:
        if not tools:
            return self.model
        key = (tuple(id(tool) for tool in tools), repr(tool_choice))
        bound = self._bound.get(key)
        if bound is None:
            try:
                bound = self.model.bind_tools(list(tools), **({"tool_choice": tool_choice} if tool_choice else {}))
            except NotImplementedError:
                raise LLMError(f"the {self.setup.provider} chat model has no native tool calling: "
                               "set llm.tool_calling = \"text\"") from None
            self._bound[key] = bound
        return bound

    async def ainvoke(self, prompt: Sequence[BaseMessage], *, tools: Sequence[Any] | None = None,
                      tool_choice: Any = None) -> AIMessage:
        """One answer to ``prompt``, retried on transient failures. A prompt rendered by the prompt
        library names its template, which goes with the request (the ``X-Claire-Prompt`` header)."""
        runnable = self._runnable(tools, tool_choice)
        options: dict[str, Any] = {}
        name = getattr(prompt, "name", None)
        if name and self.setup.sends_headers and name.isascii() and name.isprintable():
            options["extra_headers"] = {PROMPT_HEADER: name}
        messages = list(prompt)
        if self.endpoint_down:
            waited = self.clock() - self.down_since
            if waited < PROBE_AFTER:  # fail fast: the endpoint did not answer moments ago
                raise LLMError(f"the LLM endpoint {self.endpoint} did not answer {waited:.0f} s ago; not trying again "
                               f"for {PROBE_AFTER - waited:.0f} s (check that the server is running, or set "
                               "OPENAI_BASE_URL / llm.base_url)")
        attempts = 1 if self.endpoint_down else self.max_attempts
        retrying = async_retrying(attempts, base=self.retry_base_wait, max_wait=self.retry_max_wait, cap=MAX_RETRY_AFTER,
                                  sleep=self.sleep, before_sleep=self._say_waiting)
        empties = 0
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._semaphore():
                        answer = await self._call(runnable, messages, options)
                    self.endpoint_down = False
                    if self.recorder is not None:
                        self.recorder.record(messages, name, tools, answer)
                    answer = _tidied(answer)
                    if not text_of(answer).strip() and not answer.tool_calls and not answer.invalid_tool_calls:
                        empties += 1
                        if empties == 1 and attempt.retry_state.attempt_number < attempts:
                            raise TransientLLMError("the model returned an empty answer")  # once more: a server hiccup?
                        record_event("empty_answer")  # empty twice: the caller asks differently or says so
        except TransientLLMError as error:
            hint = ""
            if error.unresponsive:  # unreachable or hanging: later calls fail fast until a probe gets through
                self.endpoint_down = True
                self.down_since = self.clock()
                hint = "; check that the server is running, or set OPENAI_BASE_URL / llm.base_url"
            raise LLMError(f"LLM call to {self.endpoint} failed after {attempts} attempt(s): {error}{hint}") from None
        return answer

    def _say_waiting(self, state: Any) -> None:
        """While an endpoint does not answer, say so on each retry (a silent wait reads as a hang)."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, TransientLLMError) and error.unresponsive:
            log.warning("waiting for the LLM endpoint: %s; trying again (attempt %d of %d)", error,
                        state.attempt_number + 1, self.max_attempts)

    async def _call(self, runnable: Any, messages: list[BaseMessage], options: dict[str, Any]) -> AIMessage:
        try:
            answer = await self._waiting(runnable.ainvoke(messages, **options))
        except (ClaireError, TransientLLMError):
            raise
        except Exception as error:
            mapped = classify_error(error, endpoint=self.endpoint, model=self.model_name, timeout=self.timeout)
            if mapped is error:
                raise LLMError(f"the {self.setup.provider} chat model failed: {type(error).__name__}: {str(error)[:200]}") from None
            raise mapped from None
        if not isinstance(answer, AIMessage):
            raise TransientLLMError(f"the chat model returned {type(answer).__name__}, not an answer")
        return answer

    async def _waiting(self, call: Awaitable[Any]) -> Any:
        """Await a call, saying every SAY_WAITING_EVERY seconds that it is still waiting (a silent
        wait on a slow or hanging endpoint reads as a hang of CLAIRE)."""
        task = asyncio.ensure_future(call)
        started = self.clock()
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=SAY_WAITING_EVERY)
                if done:
                    return task.result()
                log.warning("still waiting for the LLM endpoint %s: %.0f s so far (llm.timeout is %.0f s)",
                            redact(self.endpoint), self.clock() - started, self.timeout)
        finally:
            if not task.done():
                task.cancel()

    async def ask(self, prompt: Sequence[BaseMessage], read: Callable[[str], T | None], *, follow_up: FollowUp | str,
                  refit: Callable[[int], Sequence[BaseMessage]] | None = None) -> Asked[T]:
        """Ask, and read the answer with ``read``; when it reads as None (or was empty), ask once
        more in the same conversation with the ``follow_up`` message for what was wrong (an
        ``unreadable``, ``cut`` or ``empty`` answer). An answer cut at the token limit is read
        without its last word. If the conversation would no longer fit the context window,
        ``refit(tokens)`` renders the prompt again with that many tokens less room."""
        answer = await self.ainvoke(prompt)
        first = text_of(answer)
        value = read(without_cut_tail(first) if is_cut(answer) else first)
        if value is not None:
            return Asked(value, first, list(prompt), 1)
        record_event("reasked")
        problem = "empty" if not first.strip() else ("cut" if is_cut(answer) else "unreadable")
        asking = list(follow_up(problem)) if callable(follow_up) else [HumanMessage(content=follow_up)]
        extra = [AIMessage(content=first or "(no answer)"), *asking]
        if refit is not None and self.count_tokens(list(prompt) + extra) > self.prompt_budget():
            prompt = refit(self.count_tokens(extra))  # the first answer needs room too
        conversation = prompt + extra if hasattr(prompt, "name") else list(prompt) + extra
        again = await self.ainvoke(conversation)
        second = text_of(again)
        return Asked(read(without_cut_tail(second) if is_cut(again) else second), first + "\n" + second, list(prompt), 2)

    async def aclose(self) -> None:
        """Close the model's HTTP clients and its cache."""
        await self.setup.aclose()
