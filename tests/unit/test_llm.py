"""The LLM layer over real HTTP: answers, tool calls, streaming, retries, faults, cache, usage —
for both OpenAI-compatible chat models (CLAIRE's direct one and langchain-openai's ChatOpenAI)."""

from __future__ import annotations


import pytest
from langchain_core.messages import HumanMessage

from claire.domain import Passage
from claire.config import LLMConfig
from claire.errors import LLMError
from claire.llm.client import ChatClient
from claire.llm.usage import price_for, track_usage
from claire.prompts import library
from claire.testing.scripted import scripted_client

HELLO = [HumanMessage("hello")]
CLIENTS = ["direct", "chat_openai"]


def test_missing_key_for_openai_says_what_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="set OPENAI_API_KEY"):
        ChatClient.from_config(LLMConfig(model="gpt-4o", cache=False))


async def test_scripted_client_and_nested_usage_scopes():
    client = scripted_client(["one", "two"])
    with track_usage() as run:
        with track_usage() as claim:
            await client.ainvoke(HELLO)
        await client.ainvoke(HELLO)
    assert claim.calls == 1 and run.calls == 2


def test_price_table():
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")
    assert price_for("gpt-4o-mini") != price_for("gpt-4o")
    assert price_for("my-local-model") is None


async def test_scripted_model_sees_the_template_name():
    client = scripted_client(["ok", "ok"])
    await client.ainvoke(library().render("explain", topic="iron", claim="c", context=Passage()))
    await client.ainvoke(HELLO)
    assert [r.prompt for r in client.model.requests] == ["explain", None]


async def test_ask_asks_once_more_when_the_answer_cannot_be_read():
    client = scripted_client(["no number here", "<score>0.4</score>"])
    asked = await client.ask(library().render("explain", topic="iron", claim="c", context=Passage()),
                             lambda text: 0.4 if "0.4" in text else None, follow_up="Give the score.")
    assert asked.value == 0.4 and asked.asked == 2
    second = client.model.requests[1]
    assert [m.type for m in second.messages[-2:]] == ["ai", "human"] and second.prompt == "explain"
