"""The LLM layer over real HTTP: answers, tool calls, streaming, retries, faults, cache, usage."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from claire.agent.llm import LLMClient
from claire.agent.chat_models import LangChainBackend
from claire.agent.llm_cache import ResponseCache
from claire.agent.usage import price_for, track_usage
from claire.config import LLMConfig
from claire.errors import LLMError
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.scripted import scripted_client

HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "search", "description": "search",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def client_for(server: MockOpenAIServer, tmp_path=None, **overrides) -> LLMClient:
    config = LLMConfig(
        model="test-model",
        base_url=server.base_url,
        api_key="sk-test-secret-value",
        timeout=overrides.pop("timeout", 5.0),
        max_attempts=overrides.pop("max_attempts", 4),
        retry_base_wait=0.01,
        retry_max_wait=0.05,
        cache=tmp_path is not None,
        cache_path=(tmp_path / "cache.sqlite") if tmp_path else None,
        **overrides,
    )
    return LLMClient.from_config(config)


async def test_plain_answer_and_usage(openai_server):
    openai_server.script({"content": "the answer"})
    client = client_for(openai_server)
    with track_usage() as usage:
        response = await client.chat(HELLO)
    assert response.content == "the answer"
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    sent = openai_server.requests[0]
    assert sent["model"] == "test-model" and sent["temperature"] == 0.0 and sent["messages"] == HELLO
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-secret-value"
    await client.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_json_and_streaming(openai_server, stream):
    openai_server.script({"tool_calls": [{"name": "search", "arguments": {"query": "Eiffel Tower height"}}]})
    client = client_for(openai_server, stream=stream)
    with track_usage() as usage:
        response = await client.chat(HELLO, tools=TOOLS)
    assert [c.name for c in response.tool_calls] == ["search"]
    assert response.tool_calls[0].parsed_arguments() == {"query": "Eiffel Tower height"}
    assert openai_server.requests[0]["tools"] == TOOLS
    assert openai_server.requests[0].get("stream", False) is stream
    assert usage.prompt_tokens > 0
    await client.aclose()


async def test_streamed_text(openai_server):
    openai_server.script({"content": "a fairly long streamed answer split over chunks"})
    client = client_for(openai_server, stream=True)
    response = await client.chat(HELLO)
    assert response.content == "a fairly long streamed answer split over chunks"
    await client.aclose()


async def test_429_honours_retry_after(openai_server):
    openai_server.script({"fault": "429", "retry_after": 0.4}, {"content": "after the wait"})
    client = client_for(openai_server)
    start = time.perf_counter()
    response = await client.chat(HELLO)
    elapsed = time.perf_counter() - start
    assert response.content == "after the wait"
    assert openai_server.calls == 2  # the SDK did not retry on its own
    assert elapsed >= 0.4  # waited as the server asked, not the tiny backoff
    await client.aclose()


@pytest.mark.parametrize("fault", ["500", "malformed", "empty"])
async def test_transient_faults_are_retried(openai_server, fault):
    openai_server.script({"fault": fault}, {"content": "recovered"})
    client = client_for(openai_server)
    assert (await client.chat(HELLO)).content == "recovered"
    assert openai_server.calls == 2
    await client.aclose()


async def test_timeout_is_retried_then_gives_up_clearly(openai_server):
    openai_server.script({"fault": "hang", "seconds": 2}, {"fault": "hang", "seconds": 2})
    client = client_for(openai_server, timeout=0.3, max_attempts=2)
    with pytest.raises(LLMError, match=r"after 2 attempt\(s\).*timeout"):
        await client.chat(HELLO)
    assert openai_server.calls == 2
    await client.aclose()


async def test_gives_up_after_max_attempts(openai_server):
    openai_server.script(*[{"fault": "500"}] * 3)
    client = client_for(openai_server, max_attempts=3)
    with pytest.raises(LLMError, match="after 3 attempt"):
        await client.chat(HELLO)
    assert openai_server.calls == 3
    await client.aclose()


async def test_bad_key_and_unknown_model_are_not_retried(openai_server):
    openai_server.script({"fault": "401"}, {"fault": "404"})
    client = client_for(openai_server)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        await client.chat(HELLO)
    with pytest.raises(LLMError, match="model 'test-model' was not found.*llm.model"):
        await client.chat(HELLO)
    assert openai_server.calls == 2
    await client.aclose()


async def test_unreachable_endpoint_says_what_to_set():
    server = MockOpenAIServer()
    url = server.base_url
    server.stop()  # nothing listens on that port any more
    config = LLMConfig(model="m", base_url=url, max_attempts=2, retry_base_wait=0.01, cache=False, timeout=2)
    client = LLMClient.from_config(config)
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        await client.chat(HELLO)
    await client.aclose()


def test_missing_key_for_openai_says_what_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="set OPENAI_API_KEY"):
        LangChainBackend.from_config(LLMConfig(model="gpt-4o"))


async def test_concurrency_limit_is_shared(openai_server):
    in_flight = {"now": 0, "max": 0}
    lock = threading.Lock()

    def responder(body):
        with lock:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
        time.sleep(0.05)
        with lock:
            in_flight["now"] -= 1
        return {"content": "ok"}

    openai_server.responder = responder
    client = client_for(openai_server, max_concurrency=3)
    await asyncio.gather(*(client.chat([{"role": "user", "content": str(i)}]) for i in range(12)))
    assert in_flight["max"] == 3
    await client.aclose()


async def test_cache_makes_reruns_free_and_survives_reopen(openai_server, tmp_path):
    client = client_for(openai_server, tmp_path)
    first = await client.chat(HELLO)
    with track_usage() as usage:
        second = await client.chat(HELLO)
    assert second.cached and second.content == first.content
    assert usage.calls == 0 and usage.cached_calls == 1
    assert openai_server.calls == 1
    await client.aclose()

    reopened = client_for(openai_server, tmp_path)  # a new process would see the same file
    assert (await reopened.chat(HELLO)).cached
    # a different sampling parameter is a different key
    await reopened.chat(HELLO, temperature=0.7)
    assert openai_server.calls == 2
    await reopened.aclose()

    refreshing = client_for(openai_server, tmp_path, refresh_cache=True)
    assert not (await refreshing.chat(HELLO)).cached
    assert openai_server.calls == 3
    await refreshing.aclose()


async def test_cache_concurrent_writers(openai_server, tmp_path):
    clients = [client_for(openai_server, tmp_path) for _ in range(3)]
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(20)]
    await asyncio.gather(*(c.chat(p) for c in clients for p in prompts))
    for c in clients:
        await c.aclose()  # closing waits for the queued writes
    cache = ResponseCache(tmp_path / "cache.sqlite")
    assert len(cache) == 20
    cache.close()


async def test_scripted_client_and_nested_usage_scopes():
    client = scripted_client(["one", "two"])
    with track_usage() as run:
        with track_usage() as claim:
            await client.chat(HELLO)
        await client.chat(HELLO)
    assert claim.calls == 1 and run.calls == 2 and client.total.calls == 2


def test_price_table():
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")
    assert price_for("gpt-4o-mini") != price_for("gpt-4o")
    assert price_for("my-local-model") is None


async def test_cache_is_per_endpoint(tmp_path):
    with MockOpenAIServer() as one, MockOpenAIServer() as two:
        first = client_for(one, tmp_path)
        await first.chat(HELLO)
        await first.aclose()
        other = client_for(two, tmp_path)  # same model name, same messages, another server
        assert not (await other.chat(HELLO)).cached
        assert two.calls == 1
        await other.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_the_prompt_template_travels_as_a_header(openai_server, tmp_path, stream):
    from claire.prompts import PromptLibrary
    from claire.testing.doubles import kind_of

    docs = [{"n": 1, "document_title": "Eiffel Tower", "section_title": "History", "content": "Built 1887-1889."}]
    context = {"document_title": "Paris", "section_title": "Landmarks", "content": "A passage."}
    library = PromptLibrary(variants={"nli": "feverous"})
    prompts = [
        library.render("controller", claim="c", context=context, history=[], steps_left=3, text_actions=False,
                       tools=[{"name": "search", "argument": "query", "description": "d"}]),
        library.render("verifier", claim="c", context=context, clarifications=[], documents=docs),
        library.render("rankgpt", query="q", passages=[{"n": 1, "title": "t", "content": "x"}]),
        library.render("nli", claim="c", document={**docs[0], "rows": []}),
        library.render("fact_extraction", title="Paris", section="", text="Paris is in France."),
    ]
    client = client_for(openai_server, tmp_path, stream=stream)
    for messages in prompts:
        await client.chat(messages, tools=TOOLS if messages.template == "controller" else None)
    await client.chat(prompts[1] + [{"role": "user", "content": "Once more, with the score."}])  # a follow-up
    await client.chat(HELLO)  # plain messages: no header
    sent = [h.get("x-claire-prompt") for h in openai_server.headers]
    assert sent == ["controller", "verifier", "rankgpt", "nli.feverous", "fact_extraction", "verifier", None]
    assert [r.get("claire_prompt") for r in openai_server.requests] == sent
    assert [kind_of(r) for r in openai_server.requests[:5]] == ["controller", "verifier", "rankgpt", "feverous_nli", "extract"]
    # the name is not part of the cache key: the same messages as a plain list hit the entry
    calls = openai_server.calls
    again = await client.chat(list(prompts[1]))
    repeat = await client.chat(prompts[1])
    assert again.cached and repeat.cached and openai_server.calls == calls
    await client.aclose()


async def test_scripted_backend_sees_the_template_name():
    from claire.prompts import library

    client = scripted_client(["ok", "ok"])
    await client.chat(library().render("explain", topic="iron", claim="c"))
    await client.chat(HELLO)
    assert [r.prompt_id for r in client.backend.requests] == ["explain", None]
