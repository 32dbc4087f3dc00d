"""A GGUF model run in-process by llama-cpp-python (``pip install 'claire[local]'``), as a LangChain
chat model: llama.cpp answers in the Chat Completions shape, which :func:`chat_result` reads into
LangChain's ChatResult, tool calls and usage included (the prompt tokens served from a prefix cache
as ``input_token_details["cache_read"]``). OpenAI-compatible endpoints over HTTP go through
langchain-openai's ``ChatOpenAI`` instead (:mod:`claire.llm.models`)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from claire.errors import LLMError
from claire.usage import CallTokens


class UnreadableAnswer(ValueError):
    """The model answered with something that is not a chat completion (retried: a garbled answer)."""


def chat_result(data: Any, model: str) -> ChatResult:
    """A chat-completions JSON answer as LangChain's ChatResult (tool calls parsed, bad ones kept
    as invalid tool calls, usage and finish reason in the message's metadata)."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
        calls, invalid = [], []
        for raw in message.get("tool_calls") or []:
            try:
                calls.append(parse_tool_call(raw, return_id=True))
            except Exception as error:  # arguments that are not JSON: kept, so the agent can say what went wrong
                invalid.append(make_invalid_tool_call(raw, str(error)))
        answer = AIMessage(
            content=content or "",
            tool_calls=[call for call in calls if call is not None],
            invalid_tool_calls=invalid,
            usage_metadata=usage_metadata(data.get("usage")),
            response_metadata={"model_name": data.get("model") or model, "finish_reason": choice.get("finish_reason")},
            # what some servers send beside the content: a refusal (OpenAI) and the model's reasoning
            # (vLLM, llama.cpp, DeepSeek), kept as LangChain's ChatOpenAI keeps them
            additional_kwargs={key: message[key] for key in ("refusal", "reasoning_content") if message.get(key)},
            id=data.get("id"),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise UnreadableAnswer(f"not a chat completion ({error!r})") from None
    return ChatResult(generations=[ChatGeneration(message=answer)])


def usage_metadata(usage: Any) -> UsageMetadata:
    """A chat completion's ``usage`` as LangChain's UsageMetadata, with the prompt tokens served
    from the endpoint's prompt cache as ``input_token_details["cache_read"]``."""
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    raw = {"input_tokens": usage.get("prompt_tokens"), "output_tokens": usage.get("completion_tokens"),
           "input_token_details": {"cache_read": details.get("cached_tokens") if isinstance(details, dict) else None}}
    tokens = CallTokens.from_metadata(raw)  # impossible counts dropped or clamped (and noted), the answer kept
    metadata = UsageMetadata(input_tokens=tokens.prompt, output_tokens=tokens.completion,
                             total_tokens=tokens.prompt + tokens.completion)
    if tokens.cache_read:
        metadata["input_token_details"] = {"cache_read": tokens.cache_read}
    return metadata


def tool_choice_value(choice: Any) -> Any:
    """An OpenAI ``tool_choice`` from LangChain's forms: "auto" / "none" / "required" / a tool name."""
    if choice in (None, "auto", "none", "required") or isinstance(choice, dict):
        return choice
    if choice in ("any", True):
        return "required"
    return {"type": "function", "function": {"name": str(choice)}}


def bind_openai_tools(model: BaseChatModel, tools: Sequence[Any], tool_choice: Any,
                      kwargs: dict[str, Any]) -> Runnable[LanguageModelInput, AIMessage]:
    """``model`` bound to OpenAI tool schemas (and a tool choice) for every call."""
    schemas = [convert_to_openai_tool(tool) for tool in tools]
    if tool_choice is not None:
        kwargs["tool_choice"] = tool_choice_value(tool_choice)
    return model.bind(tools=schemas, **kwargs)


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
