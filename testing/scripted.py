"""A scripted LangChain chat model for unit tests, and :func:`scripted_client`, a ``ChatClient``
over it.

:class:`ScriptedChatModel` is a LangChain chat model (native tool calling included) that answers
from a list, in order, or from a function of the request, so tests drive the real client, the
real prompts and the real graph without a server. Every request is kept in ``requests`` (its
messages, the tool schemas bound to it and the name of the prompt it was rendered from) so tests
can read what CLAIRE sent. Tests that cross the HTTP boundary use :mod:`claire.testing.mock_openai`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from claire.errors import LLMError
from claire.llm.answers import text_of
from claire.llm.client import ChatClient
from claire.llm.local import tool_choice_value
from claire.llm.models import ChatModelSetup
from claire.prompts import PROMPT_HEADER


@dataclass
class ScriptedRequest:
    """One request the scripted model received."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    prompt: str | None = None  # the template it was rendered from (``verifier``, ``controller``...)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """Every message's text, joined (for quick assertions)."""
        return "\n".join(text_of(message) for message in self.messages)


Answer = "AIMessage | str | Exception"
Script = Callable[[ScriptedRequest], Any]


class ScriptedChatModel(BaseChatModel):
    """A test double: answers from a list (in order) or from a function of the request. Items may
    be an ``AIMessage``, a plain string (the content), or an exception to raise."""

    _fn: Script | None = PrivateAttr(default=None)
    _items: list[Any] = PrivateAttr(default_factory=list)
    _requests: list[ScriptedRequest] = PrivateAttr(default_factory=list)

    @classmethod
    def from_script(cls, script: Iterable[Any] | Script) -> "ScriptedChatModel":
        """A model that answers with ``script``."""
        model = cls()
        if callable(script):
            model._fn = script
        else:
            model._items = list(script)
        return model

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request so far, oldest first."""
        return self._requests

    @property
    def _llm_type(self) -> str:
        return "claire-scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with tool schemas passed along with every call (as an OpenAI model would)."""
        schemas = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice_value(tool_choice)
        return self.bind(tools=schemas, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        headers = kwargs.pop("extra_headers", None) or {}
        request = ScriptedRequest(messages=list(messages), tools=kwargs.pop("tools", None),
                                  tool_choice=kwargs.pop("tool_choice", None), prompt=headers.get(PROMPT_HEADER),
                                  options=kwargs)
        self._requests.append(request)
        if self._fn is not None:
            item = self._fn(request)
        elif self._items:
            item = self._items.pop(0)
        else:
            raise LLMError("the scripted model has no more answers")
        if isinstance(item, Exception):
            raise item
        answer = AIMessage(content=item) if isinstance(item, str) else item.model_copy()
        if answer.usage_metadata is None:
            prompt_tokens = sum(len(text_of(m)) for m in messages) // 4
            completion = max(len(text_of(answer)) // 4, 1)
            answer.usage_metadata = UsageMetadata(input_tokens=prompt_tokens, output_tokens=completion,
                                                  total_tokens=prompt_tokens + completion)
        answer.response_metadata = {"model_name": "scripted", **(answer.response_metadata or {})}
        return ChatResult(generations=[ChatGeneration(message=answer)])


    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        return self._generate(messages, stop, run_manager, **kwargs)  # inline: answers stay in request order


def scripted_client(script: Iterable[Any] | Script, **kwargs: Any) -> ChatClient:
    """A :class:`ChatClient` over a :class:`ScriptedChatModel`; ``kwargs`` go to the client
    (retries do not wait; the template names go with each request). The model is ``client.model``; its requests ``client.model.requests``."""
    kwargs.setdefault("retry_base_wait", 0.0)
    kwargs.setdefault("prompt_header", True)  # the scripted model reads each request's template name
    cache = kwargs.pop("cache", None)
    model = ScriptedChatModel.from_script(script)
    if cache is not None:
        model.cache = cache
    setup = ChatModelSetup(model, "scripted", "scripted", kwargs.pop("model", "scripted"), cache, True)
    return ChatClient(setup, **kwargs)
