"""Replaying a recorded cassette (``llm.record``, :mod:`claire.llm.cassette`) from the mock OpenAI
server, so the real pipeline reads real model output without the model.

:class:`CassetteResponder` answers each request with what the model answered to the same request
(matched by the fingerprint of all its messages). When the request is not in the cassette — the
retrieval or a prompt changed since the recording — it answers with the next recorded answer for
the same template and fact, in the order they were recorded, so the run still reads that model's
real output for that fact. ``exact``, ``by_fact`` and ``missing`` count how each request was served.

A cassette names the model it was recorded with (each line's ``request.model``): a request for
another model is refused with HTTP 404, as an endpoint refuses a model it does not serve, and
counted in ``refused`` — another model's answers are never replayed silently (a cassette from
before lines named their model is replayed for any model, with a warning). A file that is not
a cassette (cut short, not JSON, lines of another shape) is a :class:`~claire.errors.ConfigError`
naming the file and line.
"""

from __future__ import annotations

import gzip
import logging
import threading
import zlib
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from claire.errors import ConfigError
from claire.files import json_lines, read_bytes
from claire.llm.cassette import request_fingerprint

log = logging.getLogger(__name__)


def _problem(line: Any) -> str | None:
    """What is wrong with a cassette line's shape, if anything."""
    if not isinstance(line, dict):
        return "not a JSON object"
    request, answer = line.get("request"), line.get("answer")
    if not isinstance(request, dict) or not isinstance(request.get("request"), str):
        return 'no "request" with its "request" fingerprint'
    if not isinstance(answer, dict):
        return 'no "answer" object'
    calls = answer.get("tool_calls") or []
    if not isinstance(answer.get("content") or "", str):
        return 'an "answer" whose content is not text'
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        return 'an "answer" whose tool_calls are not a list of {"name", "arguments"}'
    model = request.get("model")
    if model is not None and not isinstance(model, str):
        return 'a "model" that is not a name'
    return None


def read_cassette(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a cassette file (``.jsonl`` or ``.jsonl.gz``); a ConfigError naming the file
    (and the line) when it is not one."""
    path = Path(path)
    data = read_bytes(path, what="cassette", hint="a cassette file (.jsonl or .jsonl.gz)")
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise ConfigError(f"{path}: not a complete gzip file ({error}); record the cassette again") from None
    lines = []
    for line in json_lines(data):
        problem = line.problem or _problem(line.value)
        if problem is not None:
            cut = " (the file ends mid-line: cut short?)" if line.unterminated else ""
            raise ConfigError(f"{path}:{line.number}: not a cassette line: {problem}{cut}")
        lines.append(line.value)
    if not lines:
        raise ConfigError(f"{path}: the cassette holds no calls")
    return lines


class CassetteResponder:
    """A :class:`~claire.testing.mock_openai.MockOpenAIServer` responder serving a cassette."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lines = read_cassette(path)
        self.models = sorted({line["request"]["model"] for line in self.lines if line["request"].get("model")})
        if not self.models:
            log.warning("the cassette %s names no model (recorded before cassettes did): it is replayed for any model",
                        self.path)
        self._exact: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._by_fact: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        for line in self.lines:
            request = line["request"]
            self._exact[request["request"]].append(line["answer"])
            self._by_fact[(request.get("template"), request.get("fact"))].append(line["answer"])
        self._served: dict[tuple[Any, Any], int] = defaultdict(int)
        self._lock = threading.Lock()
        self.exact = self.by_fact = self.missing = self.refused = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """The recorded answer to this request (see the module docstring)."""
        model = body.get("model")
        if self.models and model not in self.models:
            with self._lock:
                self.refused += 1
            return {"fault": "404", "message": f"the cassette {self.path.name} was recorded with "
                                               f"{', '.join(self.models)}, not {model}"}
        fingerprint = request_fingerprint(body.get("messages") or [], body.get("claire_prompt"), body.get("tools"))
        with self._lock:
            answers = self._exact.get(fingerprint["request"])
            if answers:
                self.exact += 1
                answer = answers[0] if len(answers) == 1 else answers.popleft()
                return _item(answer)
            key = (fingerprint["template"], fingerprint["fact"])
            recorded = self._by_fact.get(key)
            if recorded:
                self.by_fact += 1
                answer = recorded[self._served[key] % len(recorded)]
                self._served[key] += 1
                return _item(answer)
            self.missing += 1
            return {"content": ""}


def _item(answer: dict[str, Any]) -> dict[str, Any]:
    """A recorded answer as a mock server item (its tool calls, finish reason, refusal, reasoning)."""
    item: dict[str, Any] = {"content": answer.get("content") or None}
    if answer.get("tool_calls"):
        item["tool_calls"] = answer["tool_calls"]
    for key in ("finish_reason", "refusal", "reasoning"):
        if answer.get(key):
            item[key] = answer[key]
    if item["content"] is None and not item.get("tool_calls"):
        item["content"] = ""
    return item
