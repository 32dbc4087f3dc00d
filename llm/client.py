"""The one client every part of CLAIRE calls its LLM through.

:class:`ChatClient` wraps the LangChain chat model of the configuration (``llm.models``) with what
a batch run needs around each call: retries with exponential backoff and jitter that honour
``Retry-After`` (the one policy in ``claire.retrying``, built once per client; the SDKs' own
retries are off), a process-wide limit on calls in flight, failing fast once the endpoint is known
to be down, and the model's context window for fitting prompts. :meth:`ChatClient.ask` is the one
"ask again when the answer cannot be read" helper.

Which failures are worth another try is decided here too (:func:`classify_error`): 429, 5xx and
garbled answers are retried; a refused connection is retried with backoff (a server starting up);
a call that got no answer within ``llm.timeout`` is not (another try would wait as long again, and
one hanging endpoint would make a single fact wait several timeouts), and it marks the endpoint
down so later calls fail at once; a bad key or an unknown model ends the call.

Every answer is tidied before anyone reads it, for what real models emit: reasoning before the
answer (``<think>`` blocks) is set aside, an empty answer is tried once more and then handed on
as empty (the caller asks again or says so), a refusal is an error of its own, and an answer cut
at the token limit is marked so :meth:`ask` does not read its last, possibly cut, word. Each of
these is counted (``usage.record_event``).

With an Anthropic model, the end of each prompt's fixed part (its system message) is marked as a
prompt-cache breakpoint (``cache_control`` on the message's last content block, as
langchain-anthropic reads it), so the provider caches the tools and instructions every call
repeats. Nothing test-specific goes to an endpoint: the prompt's template name travels as the
``X-Claire-Prompt`` header only when ``llm.prompt_header`` is on (test servers read it).

Answers are LangChain ``AIMessage`` objects; the cache and usage accounting hang on the chat model
itself (its ``cache`` and the callback of ``claire.usage``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Generic, Sequence, TypeVar

import aiohttp
import httpx
import openai
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import ValidationError
from tenacity import RetryCallState, stop_after_attempt

from claire.settings import LLMConfig
from claire.errors import ClaireError, ConfigError, LLMError, LLMUnavailable, redact
from claire.llm.cassette import Recorder
from claire.llm.answers import tag_text
from claire.llm.local import UnreadableAnswer
from claire.llm.models import ChatModelSetup, chat_model_from_config
from claire.llm.tokens import TokenCounter, known_context_window
from claire.usage import record_event
from claire.prompts import PROMPT_HEADER
from claire.prompts.answers import Answer, read_json_answer
from claire.retrying import TransientError, async_retrying, retry_after

log = logging.getLogger(__name__)

MAX_RETRY_AFTER = 120.0
PROBE_AFTER = 60.0
"""Seconds after giving up on an unresponsive endpoint before a call tries it again; calls in
between fail at once (a hanging endpoint would otherwise cost every later call its full timeout)."""
SAY_WAITING_EVERY = 15.0
"""Seconds between the notes that a call is still waiting for its answer."""
CACHE_BREAKPOINT = {"type": "ephemeral"}
"""Anthropic's mark for "cache the prompt up to here" (``cache_control`` of a content block)."""
T = TypeVar("T")
SCHEMA_FORMATS = ("json_schema", "json_object")
"""The ways an answer's schema is sent, tried in order: OpenAI's ``json_schema`` (OpenAI, vLLM,
llama.cpp's own server, Ollama), then ``json_object`` with the schema beside it (llama-cpp-python's
server, which refuses the first)."""
SCHEMA_REFUSED: dict[str, int] = {}
"""Endpoints that refused schemas this process, with how many of SCHEMA_FORMATS they refused: their
later requests start at the next way, or go without a schema when every way was refused (the prompt
still asking for JSON; the answer is read as JSON or as tags)."""
_SCHEMA_WORDS = re.compile(r"response_format|json_schema|json schema|structured output|grammar|schema", re.I)


class ModelRefusal(LLMError):
    """The model declined to answer (an OpenAI ``refusal``): asking again would not help."""


class TransientLLMError(TransientError):
    """An LLM call worth retrying; ``retry_after`` is the server's requested wait in seconds.
    ``unresponsive``: the endpoint could not be reached or did not answer in time (not a
    per-request failure such as a 429 or a garbled body); ``hung``: it did not answer in time,
    which another try would only repeat."""

    def __init__(self, message: str, retry_after: float | None = None, *, unresponsive: bool = False,
                 hung: bool = False, outage: bool = False):
        super().__init__(message, retry_after)
        self.unresponsive = unresponsive or hung
        self.hung = hung
        self.outage = outage or self.unresponsive  # the endpoint is failing, not this request (LLMUnavailable)


# -- which failures are worth retrying ----------------------------------------------------------
# The SDKs' own exception types decide: OpenAI's (every OpenAI-compatible endpoint goes through it)
# and Anthropic's when it is installed. Other providers' SDKs (through init_chat_model) raise their
# HTTP library's errors, or errors with a ``status_code``: those are read by the same rules.
_SDKS = [openai]
try:
    import anthropic
except ImportError:  # an optional provider
    pass
else:
    _SDKS.append(anthropic)
_STATUS = tuple(sdk.APIStatusError for sdk in _SDKS)
_TIMEOUTS = (*(sdk.APITimeoutError for sdk in _SDKS), httpx.TimeoutException, aiohttp.ServerTimeoutError, TimeoutError)
_CONNECTION = (*(sdk.APIConnectionError for sdk in _SDKS), httpx.TransportError, aiohttp.ClientConnectionError,
               ConnectionError)
_GARBLED = (openai.APIResponseValidationError, aiohttp.ClientPayloadError, OutputParserException, ValidationError,
            UnreadableAnswer, json.JSONDecodeError, KeyError, IndexError, TypeError)
# a connection that failed (refused, reset, no route): aiohttp reports some of these as a connect *timeout*
_REFUSED = (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, httpx.ConnectError,
            ConnectionRefusedError, ConnectionResetError)


def brief(error: BaseException) -> str:
    """The server's own message in an error, else the error's text, cut to 200 characters."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:200]
    return str(getattr(error, "message", None) or error)[:200]


def status_of(error: BaseException) -> int | None:
    """The HTTP status an error carries: an SDK's APIStatusError, else a ``status_code`` on the
    error or its response (other providers' SDKs)."""
    if isinstance(error, _STATUS):
        return error.status_code
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None) if response is not None else None
    return status if isinstance(status, int) else None


def refused(error: BaseException) -> bool:
    """Whether the connection itself failed (refused, reset, no route) somewhere down the cause
    chain: aiohttp reports those as a connect *timeout*, which they are not."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, _REFUSED):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def classify_error(error: BaseException, *, endpoint: str, model: str, timeout: float) -> Exception:
    """The error to raise for a failed call: TransientLLMError (retry), LLMError (give up), or
    ``error`` itself when it is none of the known kinds."""
    status = status_of(error)
    if status is not None and status >= 400 and _SCHEMA_WORDS.search(brief(error)):
        # the endpoint cannot take the request's answer format: no retry helps (a 500 from some servers)
        return LLMError(f"the LLM endpoint {endpoint} refused the answer format (HTTP {status}): {brief(error)}")
    if status is not None:
        headers = getattr(getattr(error, "response", None), "headers", None)
        if 200 <= status < 300:  # the body of a successful answer could not be read
            return TransientLLMError(f"unparseable response from the endpoint: {brief(error)}")
        if status == 401:
            return LLMError(f"the LLM endpoint {endpoint} rejected the API key (401): set OPENAI_API_KEY "
                            "(or llm.api_key_env, or the provider's own key variable) to a valid key")
        if status == 403:
            return LLMError(f"the LLM endpoint {endpoint} refused access (403): {brief(error)}")
        if status == 404:
            return LLMError(f"model '{model}' was not found at {endpoint} (404: {brief(error)}); "
                            "set --model / llm.model to a model that endpoint serves")
        if status == 429 or isinstance(error, openai.RateLimitError):
            return TransientLLMError("rate limited (429)", retry_after(headers), outage=True)
        if status in (408, 409, 425) or status >= 500:
            return TransientLLMError(f"server error ({status})", retry_after(headers), outage=True)
        return LLMError(f"the LLM endpoint answered HTTP {status}: {brief(error)}")
    if refused(error):
        return TransientLLMError(f"cannot connect to {endpoint}", unresponsive=True)
    if isinstance(error, _TIMEOUTS):  # before connection errors: the SDKs' timeouts are connection errors too
        return TransientLLMError(f"no answer within {timeout:g} s (timeout)", hung=True)
    if isinstance(error, _CONNECTION):
        return TransientLLMError(f"cannot connect to {endpoint}", unresponsive=True)
    if isinstance(error, _GARBLED):
        detail = str(error) if isinstance(error, UnreadableAnswer) else type(error).__name__
        return TransientLLMError(f"unparseable response from the endpoint: {detail}")
    return error


def schema_format(shape: Any, way: str) -> dict[str, Any]:
    """The ``response_format`` that sends ``shape``'s JSON schema the given way (see SCHEMA_FORMATS)."""
    if way == "json_object":
        return {"type": "json_object", "schema": shape.model_json_schema()}
    return shape.response_format()


PARSED = "claire_parsed"
"""Where an answer that fitted its prompt's JSON shape carries the typed answer (``additional_kwargs``)."""


def parsed_of(answer: AIMessage) -> Answer | None:
    """The typed answer of a prompt that asked for JSON of its shape, when the answer fitted it
    (None: a tagged or prose answer, read from its text)."""
    return (answer.additional_kwargs or {}).get(PARSED)


def structured_answer(answer: AIMessage, shape: Any, *, sent: bool) -> AIMessage:
    """An answer to a prompt that asked for JSON of ``shape``: its text kept as the model wrote it,
    with the typed answer beside it (:func:`parsed_of`) when it fits; with ``schema_error`` when it
    is JSON that does not; as it is (read from its tags) when it is no JSON at all, counted as
    ``schema_ignored`` when a schema was sent."""
    fitted, error = read_json_answer(str(answer.text), shape)
    if fitted is not None:
        return answer.model_copy(update={"additional_kwargs": {**answer.additional_kwargs, PARSED: fitted}})
    if error is not None:
        record_event("schema_invalid")
        return answer.model_copy(update={"additional_kwargs": {**answer.additional_kwargs, "schema_error": error}})
    if sent and str(answer.text).strip():
        record_event("schema_ignored")
    return answer


def _hung(error: BaseException) -> bool:
    return isinstance(error, TransientLLMError) and error.hung


# -- tidying answers -----------------------------------------------------------------------------
_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection")
_REASONING_BLOCK = re.compile(r"<\s*(%s)\s*>.*?<\s*/\s*\1\s*>" % "|".join(_REASONING_TAGS), re.I | re.S)
_REASONING_OPEN = re.compile(r"^\s*<\s*(?:%s)\s*>" % "|".join(_REASONING_TAGS), re.I)
_REASONING_CLOSE = re.compile(r"<\s*/\s*(?:%s)\s*>" % "|".join(_REASONING_TAGS), re.I)


def without_reasoning(text: str) -> tuple[str, bool]:
    """The answer without the reasoning some models write before it (``<think>...</think>`` and
    its kin), and whether there was any. An answer that opens a reasoning block and never closes it
    is all reasoning (nothing is left); one that closes a block it never opened (the chat template
    opened it) keeps what follows the close."""
    if not text or "<" not in text:
        return text or "", False
    visible = _REASONING_BLOCK.sub("", text)
    closing = list(_REASONING_CLOSE.finditer(visible))
    if closing:  # the opening tag was in the prompt's template
        visible = visible[closing[-1].end():]
    elif _REASONING_OPEN.match(visible):
        visible = ""
    return visible.strip() if visible != text else text, visible != text


def without_cut_tail(text: str) -> str:
    """An answer that stopped at the token limit, less its last word, which may itself be cut
    (``<score>0.`` of ``<score>0.85``): what is left can be read without guessing."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind(">"))
    return text[: cut + 1] if cut >= 0 else ""


def is_cut(answer: AIMessage) -> bool:
    """Whether the answer stopped at the token limit."""
    return (answer.response_metadata or {}).get("finish_reason") == "length"


def _tidied(answer: AIMessage) -> AIMessage:
    """The answer with any reasoning set aside (the text the caller reads), a refusal raised."""
    refusal = (answer.additional_kwargs or {}).get("refusal")
    text = str(answer.text)
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


def with_cache_breakpoint(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The messages with an Anthropic prompt-cache breakpoint after the prompt's fixed part: the
    last content block of its (last leading) system message carries ``cache_control``. Messages
    without a system message are returned as they are."""
    end = 0
    while end < len(messages) and isinstance(messages[end], SystemMessage):
        end += 1
    if end == 0:
        return messages
    fixed = messages[end - 1]
    content = fixed.content
    blocks = ([{"type": "text", "text": content}] if isinstance(content, str) else
              [dict(block) if isinstance(block, dict) else {"type": "text", "text": str(block)} for block in content])
    if not blocks or not any(block.get("text") for block in blocks):
        return messages
    blocks[-1]["cache_control"] = dict(CACHE_BREAKPOINT)
    return [*messages[: end - 1], fixed.model_copy(update={"content": blocks}), *messages[end:]]


@dataclass
class Asked(Generic[T]):
    """What :meth:`ChatClient.ask` got: the value read (None when even the second answer was
    unreadable), the text of every answer, the last answer as its typed shape when it fitted one,
    and the prompt finally sent."""

    value: T | None
    text: str
    prompt: list[BaseMessage]
    asked: int
    schema_error: str | None = None  # why the last JSON answer did not fit its shape (None: it did, or was not JSON)
    parsed: Answer | None = None  # the last answer, typed, when it was JSON that fitted its prompt's shape

    def field(self, name: str) -> str | None:
        """One field of the answer as text: the typed answer's, else the last ``<name>`` tag of the text."""
        if self.parsed is not None:
            value = getattr(self.parsed, name, None)
            return None if value is None else str(value)
        return tag_text(self.text, name)

    def failure(self, who: str, wanted: str) -> str | None:
        """Why no value was read, for the error of a claim or a call (None when one was): the
        validation error of a JSON answer that never fitted its shape, else the missing tag."""
        if self.value is not None:
            return None
        if self.schema_error:
            return f"{who}'s {wanted} did not fit its schema, asked twice ({self.schema_error})"
        return f"{who} gave no usable <{wanted}> (asked twice)"


FollowUp = Callable[[str], Sequence[BaseMessage]]
"""Renders the message that asks again, given what was wrong: ``unreadable``, ``cut`` or ``empty``."""


class ChatClient:
    """A LangChain chat model with retries, a concurrency limit and context-window arithmetic."""

    def __init__(self, setup: ChatModelSetup, *, max_tokens: int = 1500, timeout: float = 60.0, max_attempts: int = 6,
                 max_concurrency: int = 8, retry_base_wait: float = 0.5, retry_max_wait: float = 30.0,
                 tool_calling: str = "native", context_window: int | None = None, record: Path | None = None,
                 prompt_header: bool = False):
        self.setup = setup
        self.model: BaseChatModel = setup.model
        self.model_name = setup.model_name
        self.endpoint = setup.endpoint
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_concurrency = max_concurrency
        self.tool_calling = tool_calling
        self.context_window = context_window or known_context_window(setup.model_name, setup.model)
        self.counter = TokenCounter(setup.model_name)
        self.recorder = Recorder(record, model=setup.model_name) if record is not None else None  # llm.record
        self.prompt_header = prompt_header and setup.sends_headers  # llm.prompt_header: for test servers only
        # Set when a call gave up because the endpoint could not be reached or never answered in
        # time: later calls fail at once, and after PROBE_AFTER seconds one tries again (once),
        # until a call gets through.
        self.endpoint_down = False
        self.down_since = 0.0
        self.clock: Callable[[], float] = time.monotonic
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._bound: dict[tuple[Any, ...], Any] = {}
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # between retries (tests give a clock of their own)
        # The retry policy, built once; each call runs a copy (a policy holds the state of one call).
        self._retrying = async_retrying(max_attempts, base=retry_base_wait, max_wait=retry_max_wait, cap=MAX_RETRY_AFTER,
                                        sleep=self._pause, before_sleep=self._say_waiting, give_up=_hung)

    @classmethod
    def from_config(cls, config: LLMConfig, *, setup: ChatModelSetup | None = None) -> "ChatClient":
        """The client for an ``llm`` configuration (``setup``: an already built chat model)."""
        return cls(
            setup or chat_model_from_config(config),
            max_tokens=config.max_tokens, timeout=config.timeout, max_attempts=config.max_attempts,
            max_concurrency=config.max_concurrency, retry_base_wait=config.retry_base_wait,
            retry_max_wait=config.retry_max_wait, tool_calling=config.tool_calling,
            context_window=config.context_window or (config.local_n_ctx if config.provider == "local" else None),
            record=config.record, prompt_header=config.prompt_header,
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

    def _runnable(self, tools: Sequence[Any] | None, tool_choice: Any, one_call: bool = False) -> Any:
        if not tools:
            return self.model
        key = (tuple(id(tool) for tool in tools), repr(tool_choice), one_call)
        bound = self._bound.get(key)
        if bound is None:
            options: dict[str, Any] = {"tool_choice": tool_choice} if tool_choice else {}
            if one_call and self.asks_one_call:
                options["parallel_tool_calls"] = False
            try:
                bound = self.model.bind_tools(list(tools), **options)
            except NotImplementedError:
                raise LLMError(f"the {self.setup.provider} chat model has no native tool calling: "
                               "set llm.tool_calling = \"text\"") from None
            self._bound[key] = bound
        return bound

    def try_now(self) -> None:
        """A person asked for the work to be tried again (a re-check): the next call tries the
        endpoint at once, as a probe, instead of failing fast for what is left of PROBE_AFTER."""
        if self.endpoint_down:
            self.down_since = self.clock() - PROBE_AFTER

    @property
    def asks_one_call(self) -> bool:
        """Whether the endpoint is asked for one tool call an answer at most (``parallel_tool_calls``):
        OpenAI's own and Azure's, which take the parameter; other endpoints are not sent it (some refuse
        fields they do not know), and the controller runs the first call of their answers alone."""
        return self.setup.provider == "azure" or (self.setup.provider == "openai" and "api.openai.com" in self.endpoint)

    async def ainvoke(self, prompt: Sequence[BaseMessage], *, tools: Sequence[Any] | None = None,
                      tool_choice: Any = None, one_call: bool = False) -> AIMessage:
        """One answer to ``prompt``, retried on transient failures (a prompt rendered by the prompt
        library carries its template's ``name``, which recordings keep and, with
        ``llm.prompt_header``, a test server is told). A prompt that asks for a JSON answer (its
        ``answer`` shape, llm.structured) sends the shape's schema as ``response_format``; an
        endpoint that refuses it is asked once more without, and remembered (SCHEMA_REFUSED). An
        answer that fits the shape carries its typed answer (:func:`parsed_of`); one that does not
        keeps its text and says why in ``additional_kwargs["schema_error"]``. ``one_call``: ask for one
        tool call at most, where the endpoint takes ``parallel_tool_calls`` (:attr:`asks_one_call`)."""
        shape = getattr(prompt, "answer", None)
        wanted = shape is not None and not tools and self.setup.provider != "local"
        while True:
            level = SCHEMA_REFUSED.get(self.endpoint, 0)
            send = wanted and level < len(SCHEMA_FORMATS)
            try:
                answer = await self._invoke(prompt, tools, tool_choice, one_call,
                                            schema_format(shape, SCHEMA_FORMATS[level]) if send else None)
                break
            except LLMError as error:
                if not send or not _SCHEMA_WORDS.search(str(error)):
                    raise
                SCHEMA_REFUSED[self.endpoint] = level + 1
                record_event("schema_refused")
                after = SCHEMA_FORMATS[level + 1] if level + 1 < len(SCHEMA_FORMATS) else "no schema"
                log.warning("the LLM endpoint %s refused a %s answer format (%s): trying %s from now on",
                            redact(self.endpoint), SCHEMA_FORMATS[level], str(error)[:160], after)
        return structured_answer(answer, shape, sent=send) if shape is not None else answer

    async def _invoke(self, prompt: Sequence[BaseMessage], tools: Sequence[Any] | None, tool_choice: Any, one_call: bool,
                      response_format: dict[str, Any] | None) -> AIMessage:
        runnable = self._runnable(tools, tool_choice, one_call)
        options: dict[str, Any] = {"response_format": response_format} if response_format else {}
        name = getattr(prompt, "name", None)
        if self.prompt_header and name and name.isascii() and name.isprintable():
            options["extra_headers"] = {PROMPT_HEADER: name}
        messages = with_cache_breakpoint(list(prompt)) if self.setup.cache_breakpoints else list(prompt)
        if self.endpoint_down:
            waited = self.clock() - self.down_since
            if waited < PROBE_AFTER:  # fail fast: the endpoint did not answer moments ago
                record_event("endpoint_unavailable")  # the check it belongs to is worth trying later
                raise LLMUnavailable(f"the LLM endpoint {self.endpoint} did not answer {waited:.0f} s ago; not trying "
                                     f"again for {PROBE_AFTER - waited:.0f} s (check that the server is running, or "
                                     "set OPENAI_BASE_URL / llm.base_url)")
        attempts = 1 if self.endpoint_down else self.max_attempts
        retrying = self._retrying.copy(stop=stop_after_attempt(1)) if attempts == 1 else self._retrying.copy()
        tried = 0
        empties = 0
        try:
            async for attempt in retrying:
                with attempt:
                    tried += 1
                    async with self._semaphore():
                        answer = await self._call(runnable, messages, options)
                    self.endpoint_down = False
                    if self.recorder is not None:
                        self.recorder.record(messages, name, tools, answer)
                    answer = _tidied(answer)
                    if not answer.text.strip() and not answer.tool_calls and not answer.invalid_tool_calls:
                        empties += 1
                        if empties == 1 and tried < attempts:
                            raise TransientLLMError("the model returned an empty answer")  # once more: a server hiccup?
                        record_event("empty_answer")  # empty twice: the caller asks differently or says so
        except TransientLLMError as error:
            hint = ""
            if error.unresponsive:  # unreachable or hanging: later calls fail fast until a probe gets through
                self.endpoint_down = True
                self.down_since = self.clock()
                hint = "; check that the server is running, or set OPENAI_BASE_URL / llm.base_url"
                if error.hung and tried < attempts:
                    hint = f" (not tried again: a longer llm.timeout suits a slow endpoint){hint}"
            failure = LLMUnavailable if error.outage else LLMError
            if error.outage:
                record_event("endpoint_unavailable")  # the check it belongs to is worth trying later
            raise failure(f"LLM call to {self.endpoint} failed after {tried} attempt(s): {error}{hint}") from None
        return answer

    async def _pause(self, seconds: float) -> None:
        await self.sleep(seconds)

    def _say_waiting(self, state: RetryCallState) -> None:
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

    async def ask(self, prompt: Sequence[BaseMessage], read: Callable[[str | Answer], T | None], *,
                  follow_up: FollowUp | str, refit: Callable[[int], Sequence[BaseMessage]] | None = None) -> Asked[T]:
        """Ask, and read the answer with ``read`` (given the typed answer when the prompt asked for
        JSON of a shape and the answer fitted it, else the text); when it reads as None (or was empty), ask once
        more in the same conversation with the ``follow_up`` message for what was wrong (an
        ``unreadable``, ``cut`` or ``empty`` answer). An answer cut at the token limit is read
        without its last word. If the conversation would no longer fit the context window,
        ``refit(tokens)`` renders the prompt again with that many tokens less room."""
        answer = await self.ainvoke(prompt)
        first = str(answer.text)
        invalid = answer.additional_kwargs.get("schema_error")
        # a JSON answer that does not fit its shape is never read for a value, however it looks; one
        # that fits is read from its typed shape, never from its text
        typed = parsed_of(answer)
        value = None if invalid else read(typed if typed is not None else without_cut_tail(first) if is_cut(answer) else first)
        if value is not None:
            return Asked(value, first, list(prompt), 1, parsed=typed)
        record_event("reasked")
        problem = "invalid" if invalid else "empty" if not first.strip() else ("cut" if is_cut(answer) else "unreadable")
        asking = (list(follow_up(problem, invalid) if invalid else follow_up(problem)) if callable(follow_up)
                  else [HumanMessage(content=follow_up)])
        extra = [AIMessage(content=first or "(no answer)"), *asking]
        if refit is not None and self.count_tokens(list(prompt) + extra) > self.prompt_budget():
            prompt = refit(self.count_tokens(extra))  # the first answer needs room too
        conversation = prompt + extra if hasattr(prompt, "name") else list(prompt) + extra
        again = await self.ainvoke(conversation)
        second = str(again.text)
        still_invalid = again.additional_kwargs.get("schema_error")
        typed = parsed_of(again)
        value = None if still_invalid else read(typed if typed is not None else without_cut_tail(second) if is_cut(again) else second)
        return Asked(value, first + "\n" + second, list(prompt), 2, still_invalid, parsed=typed)

    async def aclose(self) -> None:
        """Close the model's HTTP clients and its cache, and finish writing the recording."""
        await self.setup.aclose()
        if self.recorder is not None:
            self.recorder.close()


class NoLLM:
    """The LLM client of a system that declares it calls none (``needs_llm = False``): no endpoint
    or key is asked for, closing it is all it does, and a call is a clear error naming the system."""

    def __init__(self, system: str):
        self.system = system

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError(f"system {self.system} declares needs_llm = False but called the LLM: declare "
                          "needs_llm = True (the default) to be given an endpoint")

    ainvoke = ask = invoke = _refuse

    def count_tokens(self, *args: Any, **kwargs: Any) -> int:
        """No model, no tokens."""
        return 0

    def try_now(self) -> None:
        """Nothing is waiting to be retried."""

    async def aclose(self) -> None:
        """Nothing to close."""
