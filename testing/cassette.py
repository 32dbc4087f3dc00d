"""Replaying a recorded cassette (``llm.record``, :mod:`claire.llm.cassette`) from the mock OpenAI
server, so the real pipeline reads real model output without the model.

:class:`CassetteResponder` answers each request with what the model answered to the same request
(matched by the fingerprint of all its messages). When the request is not in the cassette — the
retrieval or a prompt changed since the recording — it answers with the next recorded answer for
the same template and fact, in the order they were recorded, so the run still reads that model's
real output for that fact. ``exact``, ``by_fact`` and ``missing`` count how each request was served.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from claire.llm.cassette import request_fingerprint


def read_cassette(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a cassette file (``.jsonl`` or ``.jsonl.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        return [json.loads(line) for line in handle if line.strip()]


class CassetteResponder:
    """A :class:`~claire.testing.mock_openai.MockOpenAIServer` responder serving a cassette."""

    def __init__(self, path: str | Path):
        self.lines = read_cassette(path)
        self._exact: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._by_fact: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        for line in self.lines:
            request = line["request"]
            self._exact[request["request"]].append(line["answer"])
            self._by_fact[(request["template"], request["fact"])].append(line["answer"])
        self._served: dict[tuple[Any, Any], int] = defaultdict(int)
        self._lock = threading.Lock()
        self.exact = self.by_fact = self.missing = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """The recorded answer to this request (see the module docstring)."""
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
