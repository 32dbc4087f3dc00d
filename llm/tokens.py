"""How many tokens a prompt takes and how many a model can take: the context window of a model
(``llm.context_window``, else the chat model's LangChain profile, else a table of open-weight
model families served locally) and a counter (tiktoken for OpenAI models when its encoding files
are available, otherwise a deliberately high estimate). The counter is CLAIRE's, not the chat
model's ``get_num_tokens_from_messages``: that one would fetch tiktoken's files for OpenAI models
and ask Anthropic's API for every count, and a prompt is counted several times while it is fitted.

The estimate counts one token per three UTF-8 bytes: English runs about four characters a
token in every common tokenizer, so it over-counts by roughly a third there, and it stays on the
safe side for accented and non-Latin text, where tokens are shorter.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Sequence

from langchain_core.messages import BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from claire.llm.providers import split_model

# Context windows (tokens) of models LangChain has no profile for (open-weight families served by
# vLLM, llama.cpp, Ollama or LM Studio under their own names), by model-name prefix, from the
# models' cards. The longest matching prefix wins; a model nobody knows gets DEFAULT_CONTEXT_WINDOW,
# the size of a small local model, so an unknown model is never handed a prompt it cannot take.
CONTEXT_WINDOWS: dict[str, int] = {
    "mistral-large": 128_000,
    "llama3.1": 128_000,
    "llama-3.1": 128_000,
    "llama3.2": 128_000,
    "llama-3.3": 128_000,
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "deepseek": 128_000,
    "gemma-3": 128_000,
    "gemma3": 128_000,
}
DEFAULT_CONTEXT_WINDOW = 8192
MESSAGE_OVERHEAD = 4  # role and separators of one chat message
REPLY_PRIMING = 3
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "text-embedding-")


def known_context_window(model: str, chat_model: Any = None) -> int:
    """The window for a model: the input tokens its LangChain profile gives (``chat_model.profile``,
    the models.dev data the provider packages ship), else CONTEXT_WINDOWS by name (a provider
    prefix like ``ollama:`` ignored), else DEFAULT_CONTEXT_WINDOW."""
    profile = getattr(chat_model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if isinstance(window, int) and window > 0:
        return window
    name = split_model(model)[1].lower().rsplit("/", 1)[-1]
    best = max((prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)), key=len, default=None)
    return CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


@lru_cache(maxsize=32)
def _tiktoken_encoding(model: str) -> Any:
    """The tiktoken encoding for an OpenAI model, or None (not an OpenAI model, or its encoding
    file cannot be read or downloaded here)."""
    name = split_model(model)[1].lower()
    if not name.startswith(_OPENAI_PREFIXES):
        return None
    try:
        import tiktoken

        return tiktoken.encoding_for_model(name)
    except Exception:  # unknown model name, or no network and no cached encoding file
        try:
            import tiktoken

            return tiktoken.get_encoding("o200k_base")
        except Exception:
            return None


def estimate_tokens(text: str) -> int:
    """A deliberately high token count: one token per three UTF-8 bytes."""
    return math.ceil(len(text.encode("utf-8")) / 3)


class TokenCounter:
    """Counts prompt tokens for one model: exactly with tiktoken where possible, else estimated."""

    def __init__(self, model: str = ""):
        self.model = model
        self._encoding: Any = False  # looked up at the first count: tiktoken may try to fetch a file
        self._tool_tokens: dict[tuple[int, ...], int] = {}

    @property
    def encoding(self) -> Any:
        """The tiktoken encoding of the model, or None (looked up once, at the first count)."""
        if self._encoding is False:
            self._encoding = _tiktoken_encoding(self.model) if self.model else None
        return self._encoding

    @property
    def exact(self) -> bool:
        """Whether counts are exact (tiktoken) rather than estimated."""
        return self.encoding is not None

    def text(self, text: str) -> int:
        """Tokens of one text."""
        if not text:
            return 0
        encoding = self.encoding
        if encoding is not None:
            return len(encoding.encode(text, disallowed_special=()))
        return estimate_tokens(text)

    def messages(self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        """Prompt tokens of chat messages (and the tool schemas sent with them)."""
        total = REPLY_PRIMING
        for message in messages:
            content = message.content
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False)
            total += MESSAGE_OVERHEAD + self.text(content)
            calls = getattr(message, "tool_calls", None)
            if calls:
                total += self.text(json.dumps(calls, ensure_ascii=False, default=str))
        if tools:
            total += self._tools(tuple(tools))
        return total

    def _tools(self, tools: tuple[Any, ...]) -> int:
        """Tokens of a tool list's schemas, worked out once per list (tools are long-lived)."""
        key = tuple(id(tool) for tool in tools)
        if key not in self._tool_tokens:
            self._tool_tokens[key] = self.text(json.dumps([tool_schema(tool) for tool in tools], ensure_ascii=False))
        return self._tool_tokens[key]


def tool_schema(tool: Any) -> dict[str, Any]:
    """The OpenAI function schema of a LangChain tool (or of a schema dict, as it is)."""
    return tool if isinstance(tool, dict) else convert_to_openai_tool(tool)
