"""A GGUF model run in-process by llama-cpp-python (``pip install 'claire[local]'``), as a LangChain
chat model: llama.cpp answers in the Chat Completions shape, which
:func:`claire.llm.chat_completions.chat_result` reads, tool calls included."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import PrivateAttr

from claire.errors import LLMError
from claire.llm.chat_completions import bind_openai_tools, chat_result


class LlamaCppChatModel(BaseChatModel):
    """One GGUF file loaded by llama.cpp; one generation at a time (its contexts are not re-entrant)."""

    model_path: str
    n_ctx: int = 8192
    temperature: float = 0.0
    max_tokens: int | None = None
    chat_format: str = "chatml-function-calling"

    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any) -> None:
        """Load the model file (a clear error when llama-cpp-python or the file is missing)."""
        try:
            import llama_cpp
        except ImportError:
            raise LLMError("the local backend needs llama-cpp-python: pip install 'claire[local]'") from None
        if not Path(self.model_path).is_file():
            raise LLMError(f"cannot load the GGUF model {self.model_path}: no such file (set llm.local_model_path)")
        try:
            self._llama = llama_cpp.Llama(model_path=self.model_path, n_ctx=self.n_ctx, chat_format=self.chat_format,
                                          verbose=False)
        except (ValueError, OSError) as error:
            raise LLMError(f"cannot load the GGUF model {self.model_path}: {error} (set llm.local_model_path)") from None

    @property
    def _llm_type(self) -> str:
        return "claire-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, "temperature": self.temperature,
                "max_tokens": self.max_tokens}

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with OpenAI tool schemas passed to llama.cpp on every call."""
        return bind_openai_tools(self, tools, tool_choice, kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        kwargs.pop("extra_headers", None)  # no HTTP here
        request: dict[str, Any] = {"messages": convert_to_openai_messages(messages),
                                   "temperature": kwargs.pop("temperature", self.temperature),
                                   "max_tokens": kwargs.pop("max_tokens", self.max_tokens), "stop": stop}
        if kwargs.get("tools"):
            request["tools"] = kwargs["tools"]
            request["tool_choice"] = kwargs.get("tool_choice") or "auto"
        with self._lock:
            try:
                data = self._llama.create_chat_completion(**request)
            except ValueError as error:  # llama.cpp reports a prompt longer than its context this way
                raise LLMError(f"the local model could not take this prompt: {error} (raise llm.local_n_ctx, or "
                               "lower agent.docs_per_query / agent.max_steps)") from None
        return chat_result(dict(data), Path(self.model_path).stem)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)
