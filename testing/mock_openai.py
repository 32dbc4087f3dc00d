"""A small OpenAI-compatible Chat Completions server on 127.0.0.1, for tests and benchmarks.

It speaks the real wire protocol (JSON and server-sent-event streaming, tool calls, usage), so
the LLM layer is exercised end to end over HTTP. Answers come from a queue of scripted items or
from a responder function of the request body; items can inject faults:

    {"content": "text"}                                   a plain answer
    {"tool_calls": [{"name": "search", "arguments": {...}}]}  a tool call (content optional)
    {"fault": "429", "retry_after": 0.2}                  rate limited, with a Retry-After header
    {"fault": "500"}                                      a server error
    {"fault": "hang", "seconds": 5}                       no answer for a while (client timeout)
    {"fault": "malformed"}                                a 200 whose body is not JSON
    {"fault": "empty"}                                    a 200 with empty content
    {"fault": "401"} / {"fault": "404"}                   bad key / unknown model (a "message" of its own)
    {"content": "...", "usage": {...}}                    an answer whose usage fields are these (any values)
    {"reasoning": "text"}                                  a ``reasoning_content`` field beside the content
    {"refusal": "text"}                                    a ``refusal`` field (OpenAI's way to decline)
    {"finish_reason": "length"}                            another finish reason (a cut answer)

:mod:`claire.testing.quirks` wraps a responder so that it answers the way real models do
(reasoning blocks, calls written as text, cut answers, refusals, ...).

``latency`` seconds are added to every answer (to measure concurrency and throughput).
``max_prompt_tokens`` plays a model with a small context window: a longer prompt is rejected
with HTTP 400 ``context_length_exceeded``, as OpenAI and vLLM do, and counted in ``rejected``.
Prompt tokens are counted as a typical tokenizer would for English (about four characters a
token, plus a few per message); ``prompt_tokens`` keeps the count of every request.
``prompt_cache`` plays OpenAI's prompt cache (:class:`PrefixCache`): the part of a prompt that
repeats an earlier request's prefix, from 1,024 tokens in 128-token steps, is reported as
``usage.prompt_tokens_details.cached_tokens``; ``cached_tokens`` keeps it for every request.

Responders answer by a call's purpose: the server puts the prompt template a request was
rendered from (``controller``, ``verifier``, ``verifier.feverous``, ...) into the request body it
hands to responders and keeps in ``requests``, as ``body["claire_prompt"]`` (absent when it cannot
tell), and :func:`claire.testing.doubles.kind_of` reads it. It knows the template from the
request's own wording (:func:`template_of`), or, when the client was told to send it
(``llm.prompt_header``), from the ``X-Claire-Prompt`` header, which also names the templates of
custom prompt sets. ``headers`` keeps every request's headers.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from typing import Any, Callable, Sequence

from claire.llm.answers import text_of
from claire.prompts import PROMPT_HEADER
from claire.testing.http_server import BackgroundServer, QuietHandler

Responder = Callable[[dict[str, Any]], dict[str, Any]]


def _tokens(text: str) -> int:
    return max(len(text) // 4, 1)


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt size of a request: its messages' text, their roles, and the tool schemas."""
    total = 3
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        total += 4 + -(-len(content if isinstance(content, str) else json.dumps(content)) // 4)
    if body.get("tools"):
        total += _tokens(json.dumps(body["tools"]))
    return total


# Templates by a phrase of their fixed part (checked in this order: the FEVEROUS variants ask for
# other answers than the prompts they vary, so they come first). A test renders every template
# and checks that this agrees with the template's own name.
_PHRASES = (
    (("I could not read your answer", "Your answer was"), "follow_up"),
    (("name the contradiction precisely",), "conflict"),
    (("give one of three verdicts",), "verifier.feverous"),
    (("relates to a claim",), "nli.feverous"),
    (("fact-checking researcher",), "controller"),
    (("<inconsistency_score>", '"inconsistency_score"'), "verifier"),
    (("You rank search results",), "rankgpt"),
    (("share a name",), "clarify_entity"),
    (("background knowledge",), "explain"),
    (("SUPPORTS or REFUTES", "passage relates to a fact"), "nli"),
    (("CONSISTENT with",), "report_consistent"),
    (("CONTRADICTED by",), "report_inconsistent"),
    (("atomic facts",), "fact_extraction"),
    (("You check citations",), "cite_support"),
    (("find sources for a claim",), "cite_queries"),
    (("seem to contradict each other",), "resolve_explain"),
    (("You translate one sentence",), "translate"),
)


def template_of(messages: Sequence[dict[str, Any]]) -> str | None:
    """The built-in prompt template an OpenAI-form request was rendered from, read from the wording
    of its instructions (its system messages, else its first message); None when none matches."""
    if not messages:
        return None
    system = [text_of(m.get("content")) for m in messages if m.get("role") == "system"]
    instructions = "\n".join(system) if system else text_of(messages[0].get("content"))
    for phrases, template in _PHRASES:
        if instructions.startswith(phrases) if template == "follow_up" else any(p in instructions for p in phrases):
            return template
    return None


CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def prompt_units(body: dict[str, Any]) -> list[str]:
    """A request as the sequence a provider's prompt cache compares: the tool schemas, then each
    message (its role, then its text), about four characters a token as :func:`prompt_tokens`
    counts them."""
    units: list[str] = []
    if body.get("tools"):
        schemas = json.dumps(body["tools"], sort_keys=True)
        units += [schemas[i:i + 4] for i in range(0, len(schemas), 4)]
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content)
        units += [f"<{message.get('role')}>"] + [text[i:i + 4] for i in range(0, len(text), 4)]
    return units


class PrefixCache:
    """A provider's automatic prompt cache, as OpenAI describes its own: a request's longest prefix
    that an earlier request began with is served from the cache, counted from 1,024 tokens in
    128-token steps (shorter prompts are never cached). Blocks of 128 units are remembered by the
    hash of everything up to their end."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self._lock = threading.Lock()

    def serve(self, units: Sequence[str]) -> int:
        """The tokens of ``units`` served from the cache; remembers its blocks for later requests."""
        digest = hashlib.sha256()
        chain: list[bytes] = []
        for end in range(CACHE_STEP_TOKENS, len(units) + 1, CACHE_STEP_TOKENS):
            digest.update("\x00".join(units[end - CACHE_STEP_TOKENS:end]).encode("utf-8", "surrogatepass") + b"\x01")
            chain.append(digest.copy().digest())
        with self._lock:
            hits = 0
            while hits < len(chain) and chain[hits] in self.seen:
                hits += 1
            self.seen.update(chain)
        cached = hits * CACHE_STEP_TOKENS
        return cached if cached >= CACHE_MIN_TOKENS else 0


class MockOpenAIServer(BackgroundServer):
    """A local OpenAI-compatible Chat Completions server for tests and benchmarks."""
    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0, model: str = "mock-model",
                 max_prompt_tokens: int | None = None, prompt_cache: bool = False, port: int = 0,
                 schemas: str = "honour"):
        self.responder = responder
        # What a request's JSON schema (response_format) meets: "honour" (a tagged answer of the
        # responder's is written as the schema's JSON, as constrained decoding would), "refuse" (HTTP
        # 400, as an endpoint without structured output answers), "json_object" (HTTP 500 for OpenAI's
        # json_schema, honoured as {"type": "json_object", "schema": ...}, as llama-cpp-python's server
        # does) or "ignore" (the answer as it is).
        self.schemas = schemas
        self.latency = latency
        self.max_prompt_tokens = max_prompt_tokens
        self.rejected = 0
        self.prompt_tokens: list[int] = []
        self.prefix_cache = PrefixCache() if prompt_cache else None
        self.cached_tokens: list[int] = []
        self.model = model
        self.queue: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        super().__init__(self._handler_class(), port)

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The server's OpenAI base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------------
    def script(self, *items: dict[str, Any]) -> None:
        """Queue answers, served in order before the responder is asked."""
        with self._lock:
            self.queue.extend(items)

    @property
    def calls(self) -> int:
        """Requests received so far."""
        with self._lock:
            return len(self.requests)

    def _next_item(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return {"content": "ok"}

    # -- protocol --------------------------------------------------------------------------
    def _completion(self, body: dict[str, Any], item: dict[str, Any], cached: int = 0) -> dict[str, Any]:
        content = item.get("content")
        calls = [
            {
                "id": f"call_{index}_{int(time.time() * 1000) % 100000}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"]),
                },
            }
            for index, call in enumerate(item.get("tool_calls") or [])
        ]
        prompt_size = prompt_tokens(body)
        message: dict[str, Any] = {"role": "assistant", "content": content if content is not None else (None if calls else "")}
        if calls:
            message["tool_calls"] = calls
        for key, field in (("reasoning", "reasoning_content"), ("refusal", "refusal")):
            if item.get(key):
                message[field] = item[key]
        finish_reason = item.get("finish_reason") or ("tool_calls" if calls else "stop")
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_size,
            "completion_tokens": _tokens((content or "") + json.dumps(calls)),
            "total_tokens": prompt_size + _tokens((content or "") + json.dumps(calls)),
        }
        if self.prefix_cache is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": min(cached, prompt_size)}
        usage.update(item.get("usage") or {})  # a test's own figures, believable or not
        return {
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage,
        }

    def _handler_class(self) -> type[QuietHandler]:
        server = self

        class Handler(QuietHandler):
            disable_nagle_algorithm = True  # small JSON answers must not wait 40 ms for an ACK

            def _error(self, status: int, message: str, headers: dict | None = None) -> None:
                body = json.dumps({"error": {"message": message, "type": "mock_error", "code": status}}).encode()
                self.send_body(status, body, headers)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self.send_body(200, json.dumps({"object": "list", "data": [{"id": server.model, "object": "model"}]}).encode())
                else:
                    self._error(404, "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"no route {self.path}")
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._error(400, "request body is not JSON")
                    return
                if not isinstance(body, dict):
                    self._error(400, "request body is not a JSON object")
                    return
                prompt = self.headers.get(PROMPT_HEADER) or template_of(body.get("messages") or [])
                if prompt:
                    body["claire_prompt"] = prompt  # the request's purpose, for responders (see the module docstring)
                size = prompt_tokens(body)
                cached = server.prefix_cache.serve(prompt_units(body)) if server.prefix_cache is not None else 0
                with server._lock:
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.prompt_tokens.append(size)
                    server.cached_tokens.append(min(cached, size))
                    server.requests.append(body)
                    too_long = server.max_prompt_tokens is not None and size > server.max_prompt_tokens
                    if too_long:
                        server.rejected += 1
                if too_long:
                    body_out = {"error": {"message": f"This model's maximum context length is {server.max_prompt_tokens} tokens; "
                                          f"the messages came to {size} tokens.", "type": "invalid_request_error",
                                          "code": "context_length_exceeded"}}
                    self.send_body(400, json.dumps(body_out).encode())
                    return
                wanted = body.get("response_format") if isinstance(body.get("response_format"), dict) else None
                schema = (wanted.get("json_schema") or ({"schema": wanted["schema"]} if "schema" in wanted else None)
                          if wanted else None)
                if wanted and server.schemas == "refuse":
                    self._error(400, "response_format is not supported by this server")
                    return
                if wanted and server.schemas == "json_object" and wanted.get("type") != "json_object":
                    self._error(500, "1 validation error: response_format.type: Input should be 'text' or 'json_object'")
                    return
                item = server._next_item(body)
                if schema is not None and server.schemas in ("honour", "json_object") and isinstance(item.get("content"), str) \
                        and not item.get("tool_calls"):
                    from claire.testing.structured import as_schema_json

                    item = {**item, "content": as_schema_json(item["content"], schema)}
                if server.latency:
                    time.sleep(server.latency)
                fault = item.get("fault")
                if fault == "429":
                    self._error(429, "rate limited", {"Retry-After": str(item.get("retry_after", 0.1))})
                elif fault in ("500", "503"):
                    self._error(int(fault), "server error")
                elif fault == "401":
                    self._error(401, "invalid api key")
                elif fault == "404":
                    self._error(404, item.get("message") or f"model {body.get('model')} does not exist")
                elif fault == "hang":
                    time.sleep(float(item.get("seconds", 5)))
                    self.close_connection = True  # the client has given up by now
                elif fault == "malformed":
                    self.send_body(200, b'{"choices": [ this is not json')
                elif fault == "empty":
                    self.send_body(200, json.dumps(server._completion(body, {"content": ""}, cached)).encode())
                elif body.get("stream"):
                    self._stream(body, item, cached)
                else:
                    self.send_body(200, json.dumps(server._completion(body, item, cached)).encode())

            def _stream(self, body: dict[str, Any], item: dict[str, Any], cached: int) -> None:
                full = server._completion(body, item, cached)
                message = full["choices"][0]["message"]
                chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                text = message.get("content") or ""
                chunks += [{"content": text[i : i + 8]} for i in range(0, len(text), 8)]
                for index, call in enumerate(message.get("tool_calls") or []):
                    arguments = call["function"]["arguments"]
                    chunks.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                   "function": {"name": call["function"]["name"], "arguments": ""}}]})
                    chunks += [{"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 10]}}]}
                               for i in range(0, len(arguments), 10)]
                events = [
                    {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"], "model": full["model"],
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                    for delta in chunks
                ]
                events.append({"id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
                               "model": full["model"],
                               "choices": [{"index": 0, "delta": {}, "finish_reason": full["choices"][0]["finish_reason"]}]})
                events.append({"id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
                               "model": full["model"], "choices": [], "usage": full["usage"]})
                payload = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
                self.send_body(200, payload, content_type="text/event-stream")

        return Handler
