"""Which chat model a configuration builds, LangChain's own chat models behind the client (fakes
for tools and text answers), and provider-qualified names over real HTTP to the local server."""

from __future__ import annotations

import importlib.util

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from claire.agent.actions import read_actions
from claire.settings import LLMConfig
from claire.errors import LLMError
from claire.llm.client import ChatClient
from claire.llm.models import ChatModelSetup, chat_model_from_config
from claire.llm.providers import provider_of, split_model
from claire.usage import track_usage

HELLO = [SystemMessage("be brief"), HumanMessage("hello")]


@tool
def search(query: str) -> str:
    """Search the corpus."""
    return query


class ToolFake(FakeMessagesListChatModel):
    """A fake chat model that accepts bind_tools (langchain-core's fakes do not) and records it."""

    bound: list = []

    def bind_tools(self, tools, **kwargs):
        self.bound.append((tools, kwargs))
        return self


def over(model) -> ChatClient:
    return ChatClient(ChatModelSetup(model, "fake", "fake", "fake-model", None, False))


def test_model_names_pick_providers():
    assert split_model("anthropic:claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert split_model("qwen2.5:7b") == (None, "qwen2.5:7b")  # an Ollama tag, not a provider
    assert provider_of(LLMConfig(model="ollama:qwen2.5")) == "ollama"
    assert provider_of(LLMConfig(model="gpt-4o")) == "openai"
    assert provider_of(LLMConfig(model="my-deploy", provider="azure")) == "azure_openai"


async def test_fake_model_tool_call_and_usage():
    answer = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query": "Eiffel 1889"}, "id": "c1"}],
                       usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
                       response_metadata={"model_name": "fake-model"})
    fake = ToolFake(responses=[answer])
    with track_usage() as usage:
        response = await over(fake).ainvoke(HELLO, tools=[search], tool_choice="auto")
    assert fake.bound and fake.bound[-1][0] == [search] and fake.bound[-1][1] == {"tool_choice": "auto"}
    action = read_actions(response, ["search", "finish"])[0]
    assert (action.name, action.argument, action.problem) == ("search", "Eiffel 1889", None)
    assert usage.prompt_tokens == 11 and usage.completion_tokens == 3


async def test_fake_model_text_fallback_and_garbled_tool_arguments():
    fake = FakeMessagesListChatModel(responses=[
        AIMessage(content='I will look it up.\nsearch("Eiffel Tower completion")'),
        AIMessage(content="", invalid_tool_calls=[{"name": "search", "args": "{not json", "id": "c2", "error": "bad"}]),
    ])
    client = over(fake)
    text = read_actions(await client.ainvoke(HELLO), ["search", "finish"])[0]
    assert (text.name, text.argument) == ("search", "Eiffel Tower completion")
    garbled = read_actions(await client.ainvoke(HELLO), ["search", "finish"])[0]
    assert garbled.problem and "not valid JSON" in garbled.problem


async def test_model_without_tool_calling_says_to_use_text_mode():
    client = over(FakeMessagesListChatModel(responses=[AIMessage(content="x")]))
    with pytest.raises(LLMError, match='tool_calling = "text"'):
        await client.ainvoke(HELLO, tools=[search])


@pytest.mark.skipif(importlib.util.find_spec("langchain_mistralai") is not None, reason="langchain-mistralai is installed")
def test_missing_provider_package_is_a_clear_error():
    with pytest.raises(LLMError, match=r"langchain-mistralai package: pip install 'claire\[mistral\]'"):
        ChatClient.from_config(LLMConfig(model="mistralai:mistral-large-latest", cache=False))


def test_every_openai_compatible_endpoint_goes_through_chat_openai(tmp_path):
    plain = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test-key-0000", cache=False)
    assert type(chat_model_from_config(plain).model).__name__ == "ChatOpenAI"
    assert type(chat_model_from_config(plain.model_copy(update={"stream": True})).model).__name__ == "ChatOpenAI"
    azure = plain.model_copy(update={"provider": "azure"})
    assert type(chat_model_from_config(azure).model).__name__ == "AzureChatOpenAI"


def test_the_retired_client_setting_is_ignored_with_a_note(tmp_path, monkeypatch):
    """An old claire.toml, environment or --set naming llm.openai_client keeps working, with a note."""
    from claire.config import ConfigWarning, load_config

    toml = tmp_path / "claire.toml"
    toml.write_text('[llm]\nopenai_client = "direct"\nmodel = "m"\n', encoding="utf-8")
    monkeypatch.setenv("CLAIRE_LLM__OPENAI_CLIENT", "direct")
    with pytest.warns(ConfigWarning, match="llm.openai_client .* is ignored: it was retired") as caught:
        config = load_config(toml, {"llm.openai_client": "chat_openai"})
    assert config.llm.model == "m" and len(caught) == 3
    assert "openai_client" not in config.llm.model_dump()




def test_a_misspelt_tool_name_written_in_text_counts_as_one_repair():
    with track_usage() as usage:
        action = read_actions(AIMessage(content='Next: Search("Eiffel Tower")'), ["search", "finish"])[0]
    assert (action.name, action.argument) == ("search", "Eiffel Tower")
    assert usage.events.get("tool_name_fixed") == 1


@pytest.mark.parametrize("written", ['{"name": "search", "arguments": {"query": "Eiffel"}}',
                                     '{"name":"search",  "arguments":{"query":"Eiffel"}}',
                                     '{\n  "tool": "search",\n  "args": {"query": "Eiffel"}\n}'])
def test_the_thought_is_the_text_before_a_json_action_however_it_is_spaced(written):
    from langchain_core.messages import AIMessage

    from claire.agent.actions import thought_of

    assert thought_of(AIMessage(content=f"Thought: the year is in the history section.\n{written}")) == \
        "the year is in the history section."
