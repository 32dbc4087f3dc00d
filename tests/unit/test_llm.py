"""The LLM layer in process, with scripted models: missing keys, usage and prices (cached tokens
included), re-asking, Anthropic cache breakpoints and cassettes (the chat models over real HTTP
are in tests/integration/test_llm.py)."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage

from claire.domain import Passage
from claire.settings import LLMConfig
from claire.errors import LLMError
from claire.llm.client import ChatClient
from claire.usage import CallTokens, track_usage
from claire.prompts import library
from claire.testing.scripted import scripted_client

HELLO = [HumanMessage("hello")]


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


def test_prices_come_from_genai_prices_by_model_name():
    tokens = CallTokens(prompt=1000, completion=100)
    assert tokens.cost("gpt-4o-2024-08-06") == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)  # a dated snapshot
    assert tokens.cost("gpt-4o-mini") == pytest.approx((1000 * 0.15 + 100 * 0.6) / 1e6)
    assert tokens.cost("my-local-model") is None and tokens.cost("") is None


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


# -- what providers bill: their prompt caches -----------------------------------------------------
def test_cached_prompt_tokens_are_priced_as_each_provider_prices_them():
    from claire.usage import CallTokens, Usage

    usage = Usage()
    # OpenAI: 1,536 of 2,000 prompt tokens served from its prompt cache, at its cached price
    usage.record("gpt-4o-mini", CallTokens.from_metadata(
        {"input_tokens": 2000, "output_tokens": 100, "input_token_details": {"cache_read": 1536}}), cached=False)
    assert usage.cost_usd == pytest.approx((464 * 0.15 + 1536 * 0.075 + 100 * 0.60) / 1e6)
    # Anthropic (as langchain-anthropic reports it: input_tokens includes reads and writes): reads at a
    # tenth of the input price, 5-minute writes at 1.25x, one-hour writes at 2x
    claude = Usage()
    claude.record("claude-sonnet-4-5-20250929", CallTokens.from_metadata(
        {"input_tokens": 3000, "output_tokens": 200,
         "input_token_details": {"cache_read": 1000, "cache_creation": 0, "ephemeral_5m_input_tokens": 1200,
                                 "ephemeral_1h_input_tokens": 300}}), cached=False)
    assert claude.cost_usd == pytest.approx((500 * 3 + 1000 * 0.3 + 1200 * 3.75 + 300 * 6 + 200 * 15) / 1e6)
    assert (claude.cache_read_tokens, claude.cache_write_tokens, claude.prompt_tokens) == (1000, 1500, 3000)
    usage.add(claude)
    data = usage.to_dict()
    assert data["cache_read_tokens"] == 2536 and data["cache_write_tokens"] == 1500
    assert Usage.from_dict(data).cache_read_tokens == 2536
    # a cache hit of CLAIRE's own cache costs nothing and counts no tokens
    usage.record("gpt-4o-mini", CallTokens(prompt=5000, cache_read=5000), cached=True)
    assert usage.cached_calls == 1 and usage.prompt_tokens == 5000


def _anthropic_client(script):
    from claire.llm.client import ChatClient
    from claire.llm.models import ChatModelSetup
    from claire.testing.scripted import ScriptedChatModel

    model = ScriptedChatModel.from_script(script)
    return ChatClient(ChatModelSetup(model, "anthropic", "anthropic", "claude-sonnet-4-5", None, False,
                                     cache_breakpoints=True), retry_base_wait=0.0)


async def test_anthropic_prompts_mark_a_cache_breakpoint_after_their_fixed_part():
    from langchain_core.messages import AIMessage, SystemMessage

    client = _anthropic_client(["ok", "ok", "ok"])
    prompt = library().render("explain", topic="iron", claim="c", context=Passage())
    assert prompt[0].type == "system" and isinstance(prompt[0].content, str)
    await client.ainvoke(prompt)
    sent = client.model.requests[0].messages
    # the system message (instructions: the fixed part) ends with the breakpoint, as langchain-anthropic reads it
    assert sent[0].content == [{"type": "text", "text": prompt[0].content, "cache_control": {"type": "ephemeral"}}]
    assert [m.content for m in sent[1:]] == [m.content for m in prompt[1:]]  # what varies is left as it was
    assert isinstance(prompt[0].content, str)  # the caller's prompt is not changed
    # two system messages: the mark goes after the last of them; a prompt without one is sent as it is
    await client.ainvoke([SystemMessage("rules"), SystemMessage([{"type": "text", "text": "tools"}]), HumanMessage("q")])
    await client.ainvoke([HumanMessage("hello"), AIMessage("hi"), HumanMessage("again")])
    second, third = client.model.requests[1].messages, client.model.requests[2].messages
    assert second[0].content == "rules" and second[1].content[-1]["cache_control"] == {"type": "ephemeral"}
    assert [m.content for m in third] == ["hello", "hi", "again"]


async def test_other_providers_get_no_breakpoint():
    client = scripted_client(["ok"])
    prompt = library().render("explain", topic="iron", claim="c", context=Passage())
    await client.ainvoke(prompt)
    assert client.model.requests[0].messages[0].content == prompt[0].content


def test_an_anthropic_model_is_set_up_with_breakpoints(monkeypatch):
    pytest.importorskip("langchain_anthropic")
    from claire.llm.models import chat_model_from_config

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    setup = chat_model_from_config(LLMConfig(model="anthropic:claude-sonnet-4-5", cache=False))
    assert setup.cache_breakpoints and setup.provider == "anthropic"


# -- cassettes -------------------------------------------------------------------------------------
def _cassette_line(model="m", **answer):
    import json

    return json.dumps({"request": {"model": model, "template": "verifier", "fact": None, "request": "abc", "tools": []},
                       "answer": {"content": "x", **answer}})


@pytest.mark.parametrize(("raw", "problem"), [
    (lambda: _cassette_line() + "\n" + '{"request": {"template": "verifier"', ":2: .*invalid JSON.*cut short"),
    (lambda: "garbage\n", ":1: .*invalid JSON"),
    (lambda: _cassette_line() + "\n" + '{"request": "abc", "answer": {}}\n', ':2: .*no "request" with its'),
    (lambda: _cassette_line(tool_calls="search") + "\n", ":1: .*tool_calls"),
    (lambda: "\n", ": the cassette holds no calls"),
])
def test_a_damaged_cassette_names_its_file_and_line(tmp_path, raw, problem):
    from claire.errors import ConfigError
    from claire.testing.cassette import CassetteResponder

    path = tmp_path / "rec.jsonl"
    path.write_text(raw(), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"rec.jsonl{problem}"):
        CassetteResponder(path)


def test_a_truncated_gzip_cassette_is_named(tmp_path):
    import gzip

    from claire.errors import ConfigError
    from claire.testing.cassette import read_cassette

    whole = gzip.compress(((_cassette_line() + "\n") * 50).encode())
    path = tmp_path / "rec.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ConfigError, match="rec.jsonl.gz: not a complete gzip file"):
        read_cassette(path)


def test_a_cassette_refuses_another_model_and_warns_without_one(tmp_path, caplog):
    from claire.testing.cassette import CassetteResponder

    path = tmp_path / "rec.jsonl"
    path.write_text(_cassette_line(model="small-model") + "\n", encoding="utf-8")
    cassette = CassetteResponder(path)
    asked = {"messages": [], "claire_prompt": "verifier"}
    assert cassette({"model": "small-model", **asked})["content"] == "x"
    refused = cassette({"model": "gpt-4o", **asked})
    assert refused["fault"] == "404" and "recorded with small-model, not gpt-4o" in refused["message"]
    assert cassette.refused == 1
    old = tmp_path / "old.jsonl"
    old.write_text(_cassette_line(model=None) + "\n", encoding="utf-8")
    assert CassetteResponder(old)({"model": "anything", **asked})["content"] == "x"
    assert any("names no model" in r.getMessage() for r in caplog.records)


def test_the_mock_prefix_cache_counts_as_openai_does():
    from claire.testing.mock_openai import PrefixCache

    cache = PrefixCache()
    words = [f"w{i}" for i in range(3000)]
    assert cache.serve(words[:900]) == 0  # nothing seen yet
    assert cache.serve(words[:1000]) == 0  # 896 tokens repeat: under the 1,024-token minimum
    assert cache.serve(words[:2000]) == 0  # 1,000 repeat (seen in blocks of 128: 896): still under
    assert cache.serve(words[:2100]) == 1920  # the first 2,000 repeat: 15 whole blocks of 128
    assert cache.serve(words[:1100] + ["another", "ending"] * 100) == 1024  # 1,100 shared: 8 blocks
    assert cache.serve(["a different", "start"] + words[:2000]) == 0  # a prefix cache, not a substring one


def test_usage_scopes_hear_only_model_calls():
    from langchain_core.callbacks import CallbackManager

    from claire.usage import UsageCallback

    handler = UsageCallback()
    assert not handler.ignore_llm  # the one event it reads
    assert handler.ignore_chain and handler.ignore_agent and handler.ignore_retriever  # graph steps, tools
    manager = CallbackManager.configure(inheritable_callbacks=[handler])
    with track_usage() as usage:
        manager.on_chain_start({}, {"input": 1})  # skipped, not an error
    assert usage.calls == 0


def test_the_cassette_recorder_keeps_an_answer_with_half_a_surrogate_pair(tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage

    from claire.llm.cassette import Recorder

    recorder = Recorder(tmp_path / "calls.jsonl", model="m")
    recorder.record([HumanMessage("hello")], "explain", None, AIMessage("half \ud800 a pair"))
    recorder.close()
    line = (tmp_path / "calls.jsonl").read_text(encoding="utf-8")
    assert "half \ufffd a pair" in json.loads(line)["answer"]["content"]


# -- which failures are retried: read by the SDKs' own exception types ----------------------------
def test_failures_are_classified_by_the_sdks_exception_types():
    import anthropic
    import httpx
    import httpx2
    import openai

    from claire.errors import LLMError
    from claire.llm.client import TransientLLMError, classify_error

    def classify(error):
        return classify_error(error, endpoint="http://127.0.0.1:9/v1", model="m", timeout=30)

    request2, request = httpx2.Request("POST", "http://127.0.0.1:9/v1"), httpx.Request("POST", "https://api.anthropic.com")
    limited = classify(openai.RateLimitError("slow down", body=None,
                                             response=httpx2.Response(429, headers={"retry-after": "3"}, request=request2)))
    assert isinstance(limited, TransientLLMError) and limited.retry_after == 3 and limited.outage
    assert isinstance(classify(openai.AuthenticationError("bad key", body=None, response=httpx2.Response(401, request=request2))),
                      LLMError)
    hung = classify(openai.APITimeoutError(request=request2))  # a timeout is a connection error too: read first
    assert isinstance(hung, TransientLLMError) and hung.hung
    try:
        raise openai.APIConnectionError(request=request2) from ConnectionRefusedError("refused")
    except openai.APIConnectionError as error:
        down = classify(error)
    assert isinstance(down, TransientLLMError) and down.unresponsive and not down.hung
    # another SDK's types, by the same rules
    busy = classify(anthropic.InternalServerError("overloaded", body=None, response=httpx.Response(529, request=request)))
    assert isinstance(busy, TransientLLMError) and busy.outage
    assert classify(anthropic.APITimeoutError(request=request)).hung
    refused_format = classify(openai.InternalServerError("response_format: Input should be 'text' or 'json_object'", body=None,
                                                         response=httpx2.Response(500, request=request2)))
    assert isinstance(refused_format, LLMError) and "refused the answer format" in str(refused_format)  # never retried
    assert classify(KeyError("x")).__class__ is TransientLLMError  # a garbled answer
    other = ValueError("a bug of ours")
    assert classify(other) is other  # nothing it knows: raised as it is


def test_only_openais_own_endpoint_is_asked_for_one_tool_call_at_most():
    """The paper's controller takes one action a step: OpenAI's endpoint is told so
    (parallel_tool_calls), an OpenAI-compatible server is not sent a field it may refuse."""
    from langchain_core.tools import tool

    from claire.llm.client import ChatClient
    from claire.settings import LLMConfig

    @tool
    def search(query: str) -> str:
        """Look something up."""
        return query

    openai = ChatClient.from_config(LLMConfig(api_key="sk-unit"))
    local = ChatClient.from_config(LLMConfig(api_key="sk-unit", base_url="http://127.0.0.1:9/v1"))
    assert openai.asks_one_call and not local.asks_one_call
    assert openai._runnable([search], "auto", True).kwargs["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in local._runnable([search], "auto", True).kwargs
    assert "parallel_tool_calls" not in openai._runnable([search], "auto", False).kwargs
