"""Provider selection and the LangChain backend: fake LangChain chat models for tools and text
answers, and provider-qualified names over real HTTP to the local OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from claire.agent.actions import read_action
from claire.agent.chat_models import LangChainBackend, provider_of, split_model
from claire.agent.llm import LLMClient
from claire.agent.usage import track_usage
from claire.config import LLMConfig
from claire.errors import LLMError

HELLO = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "search", "description": "search",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


class ToolFake(FakeMessagesListChatModel):
    """A fake chat model that accepts bind_tools (langchain-core's fakes do not) and records it."""

    bound: list = []

    def bind_tools(self, tools, **kwargs):
        self.bound.append((tools, kwargs))
        return self


def test_model_names_pick_providers():
    assert split_model("anthropic:claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert split_model("qwen2.5:7b") == (None, "qwen2.5:7b")  # an Ollama tag, not a provider
    assert provider_of(LLMConfig(model="ollama:qwen2.5")) == "ollama"
    assert provider_of(LLMConfig(model="gpt-4o")) == "openai"
    assert provider_of(LLMConfig(model="my-deploy", provider="azure")) == "azure_openai"


async def test_fake_model_tool_call_and_usage():
    answer = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query": "Eiffel 1889"}, "id": "c1"}],
                       usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14})
    fake = ToolFake(responses=[answer])
    client = LLMClient(LangChainBackend(fake, name="fake"), model="fake-model")
    with track_usage() as usage:
        response = await client.chat(HELLO, tools=TOOLS, tool_choice="auto")
    assert fake.bound and fake.bound[-1][0] == TOOLS and fake.bound[-1][1] == {"tool_choice": "auto"}
    action = read_action(response, ["search", "finish"])
    assert (action.name, action.argument, action.problem) == ("search", "Eiffel 1889", None)
    assert usage.prompt_tokens == 11 and usage.completion_tokens == 3


async def test_fake_model_text_fallback_and_garbled_tool_arguments():
    fake = FakeMessagesListChatModel(responses=[
        AIMessage(content='I will look it up.\nsearch("Eiffel Tower completion")'),
        AIMessage(content="", invalid_tool_calls=[{"name": "search", "args": "{not json", "id": "c2", "error": "bad"}]),
    ])
    client = LLMClient(LangChainBackend(fake, name="fake"), model="fake-model")
    text = read_action(await client.chat(HELLO), ["search", "finish"])
    assert (text.name, text.argument) == ("search", "Eiffel Tower completion")
    garbled = read_action(await client.chat(HELLO), ["search", "finish"])
    assert garbled.problem and "not valid JSON" in garbled.problem


async def test_model_without_tool_calling_says_to_use_text_mode():
    client = LLMClient(LangChainBackend(FakeMessagesListChatModel(responses=[AIMessage(content="x")]), name="fake"), model="f")
    with pytest.raises(LLMError, match='tool_calling = "text"'):
        await client.chat(HELLO, tools=TOOLS)


async def test_provider_qualified_openai_name_over_http(openai_server):
    openai_server.script({"tool_calls": [{"name": "search", "arguments": {"query": "q"}}]}, {"content": "plain"})
    config = LLMConfig(model="openai:test-model", base_url=openai_server.base_url, api_key="sk-test-secret-value",
                       cache=False, retry_base_wait=0.01)
    client = LLMClient.from_config(config)
    response = await client.chat(HELLO, tools=TOOLS, tool_choice="auto")
    assert json.loads(response.tool_calls[0].arguments) == {"query": "q"}
    assert (await client.chat(HELLO)).content == "plain"
    first, second = openai_server.requests
    assert first["model"] == "test-model" and first["tools"] == TOOLS and first["tool_choice"] == "auto"
    assert first["messages"] == HELLO and "tools" not in second
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-secret-value"
    await client.aclose()


@pytest.mark.skipif(importlib.util.find_spec("langchain_anthropic") is not None, reason="langchain-anthropic is installed")
def test_missing_provider_package_is_a_clear_error():
    with pytest.raises(LLMError, match=r"langchain-anthropic package: pip install 'claire\[anthropic\]'"):
        LLMClient.from_config(LLMConfig(model="anthropic:claude-sonnet-4-5", cache=False))


# -- the aiohttp poster for plain OpenAI-compatible endpoints ----------------------------------
def test_the_poster_serves_only_plain_clients_and_leaves_proxied_ones_to_the_sdk(monkeypatch):
    from openai import AsyncAzureOpenAI, AsyncOpenAI

    from claire.agent.openai_http import ChatCompletionsPoster, serves

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    plain = AsyncOpenAI(api_key="sk-test-key-0000", base_url="http://127.0.0.1:9/v1")
    assert serves(plain)
    assert not serves(AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", default_query={"a": "1"}))
    assert not serves(AsyncAzureOpenAI(api_key="k", azure_endpoint="https://x.openai.azure.com", api_version="2024-06-01"))
    monkeypatch.setenv("ALL_PROXY", "http://proxy.invalid:3128")
    assert not serves(plain)  # the SDK (httpx) would go through the proxy, so it posts
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert serves(plain)

    poster = ChatCompletionsPoster(plain)
    assert poster.url == "http://127.0.0.1:9/v1/chat/completions"
    assert poster.headers["Authorization"] == "Bearer sk-test-key-0000"
    custom = AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", default_headers={"Authorization": "Token mine"})
    assert ChatCompletionsPoster(custom).headers["Authorization"] == "Token mine"  # the caller's header wins, as in the SDK
