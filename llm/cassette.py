"""Recording what a real model answered, so tests can replay it (``llm.record``).

With ``llm.record = FILE`` every request the client sends and the model's raw answer are appended
to a JSON-lines cassette. A request is kept as fingerprints only — the model it was sent to, the
template it was rendered from, a hash of the fact it is about, a hash of all its messages, the
tools offered — so the cassette holds no prompt text, no key and no header; the answer is kept as
the model wrote it (content, tool calls, finish reason, refusal, reasoning). Lines are written on
a thread of the recorder's own (the call does not wait for the disk); :meth:`Recorder.close`
waits for them. :mod:`claire.testing.cassette` serves a cassette back from the mock OpenAI
server: the same pipeline, fed real model output, without the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages

from claire.errors import ConfigError
from claire.files import append_jsonl, valid_text

log = logging.getLogger(__name__)
_FACT = re.compile(r"<fact>(.*?)</fact>", re.S)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def request_fingerprint(messages: Sequence[dict[str, Any]], template: str | None, tools: Sequence[Any] | None,
                        model: str | None = None) -> dict[str, Any]:
    """What identifies a request without its text: the model it went to, its template, the hash of
    the fact it asks about (the first ``<fact>`` in it), the hash of every message, and the names
    of the tools offered. ``messages`` are in the OpenAI form, as they go over the wire."""
    texts = [f"{m.get('role')}\0{m.get('content') if isinstance(m.get('content'), str) else json.dumps(m.get('content'))}"
             for m in messages]
    joined = "\n".join(texts)
    fact = _FACT.search(joined)
    names = []
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {"name": getattr(tool, "name", str(tool))}
        names.append(str(function.get("name")))
    return {"model": model, "template": template, "fact": _digest(fact.group(1).strip()) if fact else None,
            "request": _digest(joined), "tools": names}


def answer_record(answer: AIMessage) -> dict[str, Any]:
    """A model's raw answer as a cassette keeps it (what the endpoint sent, before any tidying)."""
    extra = answer.additional_kwargs or {}
    return {
        "content": answer.content if isinstance(answer.content, str) else json.dumps(answer.content),
        "tool_calls": [{"name": call["name"], "arguments": call.get("args") or {}} for call in answer.tool_calls]
        + [{"name": call.get("name") or "", "arguments": call.get("args") or ""} for call in answer.invalid_tool_calls],
        "finish_reason": (answer.response_metadata or {}).get("finish_reason"),
        "refusal": extra.get("refusal"),
        "reasoning": extra.get("reasoning_content"),
    }


class Recorder:
    """Appends (request fingerprint, raw answer) lines to a cassette file, one per call of ``model``."""

    def __init__(self, path: Path, *, model: str | None = None):
        self.path = Path(path)
        self.model = model
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"llm.record: cannot create the folder of {self.path} ({error.strerror or error})") from None
        if self.path.is_dir() or not os.access(self.path.parent, os.W_OK):
            raise ConfigError(f"llm.record: {self.path} is not a file CLAIRE can write")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claire-cassette")
        self._failed = False

    def record(self, messages: Sequence[BaseMessage], template: str | None, tools: Sequence[Any] | None,
               answer: AIMessage) -> None:
        """Queue one call's line for writing (in call order)."""
        wire = convert_to_openai_messages(list(messages))
        line = {"request": request_fingerprint(wire, template, tools, self.model), "answer": answer_record(answer)}
        self._writer.submit(self._append, line).add_done_callback(self._written)

    def _append(self, line: dict[str, Any]) -> None:
        """Write one line (in the writer thread); half a surrogate pair is written as U+FFFD."""
        append_jsonl(self.path, valid_text(line))

    def _written(self, future: Future[None]) -> None:
        error = future.exception()
        if error is not None and not self._failed:  # said once: the run goes on without recording
            self._failed = True
            log.warning("cannot write the cassette %s: %s", self.path, error)

    def close(self) -> None:
        """Wait for the lines not yet written."""
        self._writer.shutdown(wait=True)
