"""Which chat model a configuration builds, LangChain's own chat models behind the client (fakes
for tools and text answers), and provider-qualified names over real HTTP to the local server."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool

from claire.settings import LLMConfig
from claire.llm.answers import text_of
from claire.llm.client import ChatClient
from claire.llm.models import ChatModelSetup

HELLO = [SystemMessage("be brief"), HumanMessage("hello")]


@tool
def search(query: str) -> str:
    """Search the corpus."""
    return query


def over(model) -> ChatClient:
    return ChatClient(ChatModelSetup(model, "fake", "fake", "fake-model", None, False))


async def test_provider_qualified_openai_name_over_http(openai_server):
    openai_server.script({"tool_calls": [{"name": "search", "arguments": {"query": "q"}}]}, {"content": "plain"})
    config = LLMConfig(model="openai:test-model", base_url=openai_server.base_url, api_key="sk-test-secret-value",
                       cache=False, retry_base_wait=0.01)
    client = ChatClient.from_config(config)
    answer = await client.ainvoke(HELLO, tools=[search], tool_choice="auto")
    assert answer.tool_calls[0]["args"] == {"query": "q"}
    assert text_of(await client.ainvoke(HELLO)) == "plain"
    first, second = openai_server.requests
    assert first["model"] == "test-model" and first["tools"][0]["function"]["name"] == "search"
    assert first["tool_choice"] == "auto" and "tools" not in second
    assert first["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-secret-value"
    await client.aclose()
