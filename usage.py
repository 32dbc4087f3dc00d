"""Token, call and cost accounting for LLM calls, per process, per run and per claim. A shared leaf:
the LLM client, the agent, the runs and the benchmarks all count into it.

``track_usage()`` opens a scope; every LangChain chat-model call made inside it (including in
tasks it spawns) is added to that scope and to every enclosing one. The calls are seen through a
LangChain callback handler (:class:`UsageCallback`, reading each answer's ``usage_metadata``)
that LangChain attaches to every call made while a scope is open (``register_configure_hook``).
An answer served from CLAIRE's cache counts as a cached call, without tokens or cost.

Providers cache repeated prompt prefixes themselves and bill those tokens apart: OpenAI reports
``prompt_tokens_details.cached_tokens`` (read at a lower price), Anthropic its cache reads and
writes; LangChain's chat models hand both on as ``usage_metadata["input_token_details"]``
(``cache_read``, ``cache_creation`` and its 5-minute / 1-hour split). They are counted in
``cache_read_tokens`` and ``cache_write_tokens`` (both part of ``prompt_tokens``) and priced as
the provider prices them, by `genai-prices` (its bundled price data, never fetched at run time:
cache reads and 5-minute / one-hour cache writes, price tiers and price changes by date).

Beside the tokens, a scope counts what had to be done to read real models' answers
(:func:`record_event`): an answer asked again, a reasoning block removed, a cut or empty answer,
a tool call written as text, a misspelt tool name or malformed arguments repaired, an invalid or
repeated action, a refusal (the kinds are listed in :data:`EVENTS`).
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Iterator, Mapping

import genai_prices
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook

log = logging.getLogger(__name__)

CACHE_HIT = "claire_cache_hit"
"""The ``response_metadata`` key the LLM cache sets on an answer it served."""


MAX_CALL_TOKENS = 100_000_000
"""More tokens than any one call can have (the largest context windows hold a few million): a
count above it is not believed."""

_told_unbelievable = False


def token_count(value: Any, *, limit: int = MAX_CALL_TOKENS) -> int | None:
    """A token count an endpoint (or a stored run) gave, when it is believable: a whole number from
    0 to ``limit``; None for anything else (negative, not a number, NaN, infinite, absurdly large).
    Usage is the endpoint's advice: the caller drops or clamps what is impossible and keeps the answer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not (value.isascii() and value.isdigit()):
            return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if number != number or not 0 <= number <= limit or number != int(number):
        return None
    return int(number)


def believable_cost(value: Any) -> float | None:
    """A stored cost in USD when it is a finite number of at least zero; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < float("inf") else None


def note_unbelievable_usage(what: str) -> None:
    """Count a call whose usage held an impossible count (``usage_fixed``) and say so, once a process."""
    global _told_unbelievable
    record_event("usage_fixed")
    if not _told_unbelievable:
        _told_unbelievable = True
        log.warning("the LLM endpoint reported impossible token counts (%s); they were dropped or clamped, and the "
                    "answers kept (token and cost figures may be low)", what)


@dataclass(frozen=True)
class CallTokens:
    """The tokens of one call as the provider counted them: ``prompt`` (all of them, cached or
    not), ``completion``, and of the prompt, those read from the provider's prompt cache and
    those written to it (``cache_write_long``: of those written, the ones kept for an hour)."""

    prompt: int = 0
    completion: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_long: int = 0

    @classmethod
    def from_metadata(cls, usage: Mapping[str, Any] | None) -> "CallTokens":
        """The tokens of LangChain's ``usage_metadata`` (its ``input_token_details`` included)."""
        usage = usage if isinstance(usage, Mapping) else {}
        details = usage.get("input_token_details")
        details = details if isinstance(details, Mapping) else {}
        wrong: list[str] = []

        def count(source: Mapping[str, Any], key: str) -> int:
            value = source.get(key)
            if value is None:
                return 0
            number = token_count(value)
            if number is None:
                wrong.append(f"{key}={str(value)[:20]}")
            return number or 0

        prompt, completion = count(usage, "input_tokens"), count(usage, "output_tokens")
        long = count(details, "ephemeral_1h_input_tokens")
        written = count(details, "cache_creation") + count(details, "ephemeral_5m_input_tokens") + long
        read = count(details, "cache_read")
        if read + written > prompt:  # a cache cannot serve more of the prompt than there is
            wrong.append(f"cached {read + written} of {prompt} prompt tokens")
            read, written, long = min(read, prompt), min(written, max(prompt - read, 0)), 0
        if wrong:
            note_unbelievable_usage(", ".join(wrong))
        return cls(prompt, completion, read, written, long)

    def cost(self, model: str) -> float | None:
        """USD for this call by ``model``'s price (genai-prices), None when the model is unknown."""
        return _cost(model, self) if model else None


@lru_cache(maxsize=256)  # one call is recorded in every open scope (the run's, the claim's): priced once
def _cost(model: str, tokens: CallTokens) -> float | None:
    usage = genai_prices.Usage(input_tokens=tokens.prompt, output_tokens=tokens.completion,
                               cache_read_tokens=tokens.cache_read, cache_write_tokens=tokens.cache_write,
                               cache_write_1h_tokens=tokens.cache_write_long,
                               cache_write_5m_tokens=tokens.cache_write - tokens.cache_write_long)
    try:
        return float(genai_prices.calc_price(usage, model_ref=model).total_price)
    except LookupError:  # a local or self-hosted model: no price
        return None


EVENTS: dict[str, str] = {
    "reasked": "an answer that could not be read was asked for once more",
    "reasoning_removed": "a <think> block (or a reasoning-only answer) was set aside before reading",
    "cut_answer": "the answer stopped at the token limit (finish_reason length)",
    "empty_answer": "the answer was empty",
    "refusal": "the model declined to answer",
    "usage_fixed": "the endpoint reported impossible token counts (negative, not a number, more cached than sent): dropped or clamped",
    "text_tool_call": "a tool call came as text (JSON or name(argument)) instead of a native call",
    "tool_name_fixed": "a tool name in another spelling or case was mapped to the real one",
    "arguments_fixed": "malformed or wrongly typed tool arguments were repaired",
    "parallel_calls": "several tool calls came at once (each ran as its own step)",
    "plain_text_end": "the controller answered in plain text, which ended the research (finish() offered)",
    "extra_actions_dropped": "several actions came in one answer and only the first ran (one action a step)",
    "asked_for_action": "the controller answered in plain text with no finish() offered, and was asked again for an action",
    "score_words": "a score written in words (high, low) was read as a number",
    "invalid_action": "an action that could not be run (unknown tool, missing argument, no action)",
    "repeated_action": "an action already taken was asked for again",
    "schema_refused": "the endpoint refused a JSON schema for the answer: asked without one (remembered for the endpoint)",
    "schema_ignored": "a JSON schema was sent but the answer was not JSON: read as tags",
    "schema_invalid": "a JSON answer did not fit its schema: asked again with the validation error",
    "no_thought": "the controller chose an action without writing the thought asked for before it",
    "endpoint_unavailable": "a call gave up because the LLM endpoint kept failing (unreachable, too slow, 429 or 5xx)",
}
"""What :func:`record_event` counts, by kind."""

REPAIRS = ("reasoning_removed", "cut_answer", "empty_answer", "text_tool_call", "tool_name_fixed", "arguments_fixed",
           "parallel_calls", "plain_text_end", "asked_for_action", "score_words")
"""Event kinds that mean an answer was read only after a repair."""


@dataclass
class Usage:
    """Calls, cached calls (answered by CLAIRE's cache), tokens (``cache_read_tokens`` and
    ``cache_write_tokens``: the prompt tokens the provider read from or wrote to its prompt
    cache, counted in ``prompt_tokens`` too), cost (None when the model's price is unknown), and
    the events of reading the answers (:data:`EVENTS`)."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    events: dict[str, int] = field(default_factory=dict)
    # the answers CLAIRE's cache served: the tokens their first call took and what it would cost
    # again (what a provider bills for a fresh run is cost_usd + cached_cost_usd)
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    cached_cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def record(self, model: str, tokens: CallTokens, cached: bool) -> None:
        """Add one call (a cache hit counts as a cached call: its tokens and cost are what a fresh
        run would pay, kept apart from what this one paid)."""
        cost = tokens.cost(model)
        if cached:
            self.cached_calls += 1
            self.cached_prompt_tokens += tokens.prompt
            self.cached_completion_tokens += tokens.completion
            if cost is not None:
                self.cached_cost_usd = (self.cached_cost_usd or 0.0) + cost
                self.cost_usd = self.cost_usd or 0.0  # served from the cache: this run paid nothing for it
            return
        self.calls += 1
        self.prompt_tokens += tokens.prompt
        self.completion_tokens += tokens.completion
        self.cache_read_tokens += tokens.cache_read
        self.cache_write_tokens += tokens.cache_write
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def add(self, other: "Usage") -> None:
        """Add another tally to this one."""
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.cached_completion_tokens += other.cached_completion_tokens
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd
        if other.cached_cost_usd is not None:
            self.cached_cost_usd = (self.cached_cost_usd or 0.0) + other.cached_cost_usd
        for kind, count in other.events.items():
            self.events[kind] = self.events.get(kind, 0) + count

    def to_dict(self) -> dict:
        """The tally as plain data, with the total tokens."""
        data = asdict(self)
        data["total_tokens"] = self.total_tokens
        return data

    @property
    def uncached_cost_usd(self) -> float | None:
        """What the calls would cost with nothing served from CLAIRE's cache (None when no price is known)."""
        if self.cost_usd is None and self.cached_cost_usd is None:
            return None
        return (self.cost_usd or 0.0) + (self.cached_cost_usd or 0.0)

    @classmethod
    def read(cls, data: Any) -> tuple["Usage", list[str]]:
        """A tally from its plain data (missing fields are zero), and what in it was impossible: a
        stored run is read as an endpoint's answer is, what no call could have (a negative, a
        word, NaN, an infinite or absurd figure, more cached than sent) dropped, never summed."""
        data = data if isinstance(data, dict) else {}
        problems: list[str] = []
        counts = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens",
                  "cached_prompt_tokens", "cached_completion_tokens")
        values: dict[str, Any] = {}
        for key in counts:
            if data.get(key) is None:
                continue
            number = token_count(data[key], limit=MAX_CALL_TOKENS * 1000)
            if number is None:
                problems.append(f"{key} {str(data[key])[:20]}")
            values[key] = number or 0
        usage = cls(**values)
        if usage.cache_read_tokens + usage.cache_write_tokens > usage.prompt_tokens:
            problems.append("more prompt tokens cached than sent")
            usage.cache_read_tokens = min(usage.cache_read_tokens, usage.prompt_tokens)
            usage.cache_write_tokens = min(usage.cache_write_tokens, usage.prompt_tokens - usage.cache_read_tokens)
        for key in ("cost_usd", "cached_cost_usd"):
            if data.get(key) is not None:
                setattr(usage, key, believable_cost(data[key]))
                if getattr(usage, key) is None:
                    problems.append(f"{key} {str(data[key])[:20]}")
        events = data.get("events")
        if isinstance(events, dict):
            usage.events = {str(k): n for k, n in ((k, token_count(v)) for k, v in events.items()) if n}
        return usage, problems

    @classmethod
    def from_dict(cls, data: dict | None) -> "Usage":
        """A tally from its plain data, impossible figures dropped (:meth:`read`)."""
        return cls.read(data)[0]


_scopes: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar("claire_usage_scopes", default=())


class UsageCallback(BaseCallbackHandler):
    """Adds each finished chat-model call to every open :func:`track_usage` scope."""

    run_inline = True  # read the scopes of the task that made the call, with no thread hop
    # only chat-model ends matter: LangChain skips this handler for every other event
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Record one answer's tokens (or a cache hit) under its model's name."""
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        if not isinstance(generation, ChatGeneration):
            return
        message = generation.message
        metadata = message.response_metadata or {}
        model = str(metadata.get("model_name") or metadata.get("model") or "")
        record_call(model, CallTokens.from_metadata(getattr(message, "usage_metadata", None)), bool(metadata.get(CACHE_HIT)))


_callback: contextvars.ContextVar[UsageCallback | None] = contextvars.ContextVar("claire_usage_callback", default=None)
register_configure_hook(_callback, inheritable=True)
_RECORDER = UsageCallback()


@contextmanager
def track_usage() -> Iterator[Usage]:
    """Collect the usage of every LLM call made inside the block (and its child tasks)."""
    usage = Usage()
    token = _scopes.set(_scopes.get() + (usage,))
    hook = _callback.set(_RECORDER)
    try:
        yield usage
    finally:
        _callback.reset(hook)
        _scopes.reset(token)


def record_call(model: str, tokens: CallTokens, cached: bool = False) -> None:
    """Add one call to every open scope."""
    for usage in _scopes.get():
        usage.record(model, tokens, cached)


def record_usage(counted: Usage) -> None:
    """Add calls counted in another process (a Ray worker's check) to every open scope."""
    for usage in _scopes.get():
        usage.add(counted)


def record_event(kind: str) -> None:
    """Count one event of reading an answer (a kind of :data:`EVENTS`) in every open scope."""
    for usage in _scopes.get():
        usage.events[kind] = usage.events.get(kind, 0) + 1
