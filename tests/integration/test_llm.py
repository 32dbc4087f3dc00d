"""The LLM layer over real HTTP: answers, tool calls, streaming, retries, faults, cache, usage —
through langchain-openai's ChatOpenAI, the one client of OpenAI-compatible endpoints."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from claire.settings import LLMConfig
from claire.errors import LLMError
from claire.llm.answers import text_of
from claire.llm.cache import SQLiteChatCache
from claire.llm.client import ChatClient
from claire.usage import track_usage
from claire.prompts import PromptLibrary
from claire.testing.doubles import kind_of
from claire.testing.mock_openai import MockOpenAIServer

HELLO = [HumanMessage("hello")]


@tool
def search(query: str) -> str:
    """Search the corpus."""
    return query


def client_for(server: MockOpenAIServer, tmp_path=None, **overrides) -> ChatClient:
    config = LLMConfig(
        model=overrides.pop("model", "test-model"),
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
    return ChatClient.from_config(config)


class Clock:
    """Records the waits the retry policy asks for instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_plain_answer_and_usage(openai_server):
    openai_server.script({"content": "the answer"})
    client = client_for(openai_server)
    with track_usage() as usage:
        answer = await client.ainvoke(HELLO)
    assert text_of(answer) == "the answer"
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    sent = openai_server.requests[0]
    assert sent["model"] == "test-model" and sent["temperature"] == 0.0
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-secret-value"
    await client.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_and_streaming(openai_server, stream):
    openai_server.script({"tool_calls": [{"name": "search", "arguments": {"query": "Eiffel Tower height"}}]})
    client = client_for(openai_server, stream=stream)
    with track_usage() as usage:
        answer = await client.ainvoke(HELLO, tools=[search])
    assert [(c["name"], c["args"]) for c in answer.tool_calls] == [("search", {"query": "Eiffel Tower height"})]
    sent = openai_server.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["search"]
    assert sent.get("stream", False) is stream
    assert usage.prompt_tokens > 0
    await client.aclose()


async def test_garbled_tool_arguments_are_kept_as_invalid_calls(openai_server):
    openai_server.script({"tool_calls": [{"name": "search", "arguments": '{"query": "unfinished'}]})
    client = client_for(openai_server)
    answer = await client.ainvoke(HELLO, tools=[search])
    assert not answer.tool_calls and answer.invalid_tool_calls[0]["name"] == "search"
    await client.aclose()


async def test_streamed_text(openai_server):
    openai_server.script({"content": "a fairly long streamed answer split over chunks"})
    client = client_for(openai_server, stream=True)
    assert text_of(await client.ainvoke(HELLO)) == "a fairly long streamed answer split over chunks"
    await client.aclose()


async def test_429_honours_retry_after(openai_server):
    openai_server.script({"fault": "429", "retry_after": 7.5}, {"content": "after the wait"})
    client = client_for(openai_server)
    client.sleep = clock = Clock()
    assert text_of(await client.ainvoke(HELLO)) == "after the wait"
    assert openai_server.calls == 2  # the SDK did not retry on its own
    assert clock.waits == [7.5]  # waited as the server asked, not the tiny backoff
    await client.aclose()


@pytest.mark.parametrize("fault", ["500", "malformed", "empty"])
async def test_transient_faults_are_retried(openai_server, fault):
    openai_server.script({"fault": fault}, {"content": "recovered"})
    client = client_for(openai_server)
    assert text_of(await client.ainvoke(HELLO)) == "recovered"
    assert openai_server.calls == 2
    await client.aclose()


async def test_a_hung_endpoint_fails_after_one_timeout_not_six(openai_server):
    # an endpoint that accepts and never answers: the first call gives up after one timeout (another
    # try would only wait as long again), and the calls after it fail at once
    openai_server.script({"fault": "hang", "seconds": 2}, {"fault": "hang", "seconds": 2})
    client = client_for(openai_server, timeout=0.3, max_attempts=6)
    with pytest.raises(LLMError, match=r"after 1 attempt\(s\).*timeout.*not tried again"):
        await client.ainvoke(HELLO)
    with pytest.raises(LLMError, match="did not answer 0 s ago"):
        await client.ainvoke(HELLO)
    assert openai_server.calls == 1
    await client.aclose()


async def test_gives_up_after_max_attempts(openai_server):
    openai_server.script(*[{"fault": "500"}] * 3)
    client = client_for(openai_server, max_attempts=3)
    with pytest.raises(LLMError, match="after 3 attempt"):
        await client.ainvoke(HELLO)
    assert openai_server.calls == 3
    await client.aclose()


async def test_bad_key_and_unknown_model_are_not_retried(openai_server):
    openai_server.script({"fault": "401"}, {"fault": "404"})
    client = client_for(openai_server)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        await client.ainvoke(HELLO)
    with pytest.raises(LLMError, match="model 'test-model' was not found.*llm.model"):
        await client.ainvoke(HELLO)
    assert openai_server.calls == 2
    await client.aclose()


async def test_unreachable_endpoint_says_what_to_set():
    server = MockOpenAIServer()
    url = server.base_url
    server.stop()  # nothing listens on that port any more
    config = LLMConfig(model="m", base_url=url, max_attempts=2, retry_base_wait=0.01, cache=False, timeout=2)
    client = ChatClient.from_config(config)
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        await client.ainvoke(HELLO)
    assert client.endpoint_down
    await client.aclose()


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
    await asyncio.gather(*(client.ainvoke([HumanMessage(str(i))]) for i in range(12)))
    assert in_flight["max"] == 3
    await client.aclose()


async def test_cache_makes_reruns_free_and_survives_reopen(openai_server, tmp_path):
    client = client_for(openai_server, tmp_path)
    first = await client.ainvoke(HELLO)
    with track_usage() as usage:
        second = await client.ainvoke(HELLO)
    assert second.response_metadata.get("claire_cache_hit") and second.content == first.content
    assert usage.calls == 0 and usage.cached_calls == 1
    assert openai_server.calls == 1
    await client.aclose()

    reopened = client_for(openai_server, tmp_path)  # a new process would see the same file
    assert (await reopened.ainvoke(HELLO)).response_metadata.get("claire_cache_hit")
    await reopened.aclose()
    warmer = client_for(openai_server, tmp_path, temperature=0.7)  # another sampling setting
    await warmer.ainvoke(HELLO)
    assert openai_server.calls == 2
    await warmer.aclose()

    refreshing = client_for(openai_server, tmp_path, refresh_cache=True)
    assert not (await refreshing.ainvoke(HELLO)).response_metadata.get("claire_cache_hit")
    assert openai_server.calls == 3
    await refreshing.aclose()


async def test_empty_answers_are_not_cached(openai_server, tmp_path):
    openai_server.script({"fault": "empty"}, {"content": "real"})
    client = client_for(openai_server, tmp_path)
    assert text_of(await client.ainvoke(HELLO)) == "real"
    assert text_of(await client.ainvoke(HELLO)) == "real" and openai_server.calls == 2
    await client.aclose()


async def test_cache_concurrent_writers(openai_server, tmp_path):
    clients = [client_for(openai_server, tmp_path) for _ in range(3)]
    prompts = [[HumanMessage(f"q{i}")] for i in range(20)]
    await asyncio.gather(*(c.ainvoke(p) for c in clients for p in prompts))
    for c in clients:
        await c.aclose()  # closing waits for the queued writes
    cache = SQLiteChatCache(tmp_path / "cache.sqlite", endpoint=openai_server.base_url)
    assert len(cache) == 20
    cache.close()


async def test_cache_is_per_endpoint(tmp_path):
    with MockOpenAIServer() as one, MockOpenAIServer() as two:
        first = client_for(one, tmp_path)
        await first.ainvoke(HELLO)
        await first.aclose()
        other = client_for(two, tmp_path)  # same model name, same messages, another server
        assert not (await other.ainvoke(HELLO)).response_metadata.get("claire_cache_hit")
        assert two.calls == 1
        await other.aclose()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("prompt_header", [False, True])
async def test_no_claire_header_reaches_an_endpoint_unless_a_test_turns_it_on(openai_server, tmp_path, stream,
                                                                              prompt_header):
    from claire.domain import Evidence, Passage

    docs = [Evidence(n=1, block_id="b1", document_title="Eiffel Tower", section_title="History", content="Built 1887-1889.")]
    context = Passage(document_title="Paris", section_title="Landmarks", content="A passage.")
    prompts_ = PromptLibrary(variants={"nli": "feverous"})
    prompts = [
        prompts_.render("controller", claim="c", context=context, history=[], steps_left=3, text_actions=False,
                        finish=True, thoughts=True, tools=[{"name": "search", "argument": "query", "description": "d"}]),
        prompts_.render("verifier", claim="c", context=context, clarifications=[], explanations=[], documents=docs),
        prompts_.render("rankgpt", query="q", passages=docs, max_chars=600),
        prompts_.render("nli", claim="c", document=docs[0]),
        prompts_.render("fact_extraction", title="Paris", section="", text="Paris is in France.", language=""),
    ]
    client = client_for(openai_server, tmp_path, stream=stream, prompt_header=prompt_header)
    for prompt in prompts:
        await client.ainvoke(prompt, tools=[search] if prompt.template == "controller" else None)
    await client.ainvoke(prompts[1] + [AIMessage("no score"), HumanMessage("Once more, with the score.")])  # a follow-up
    await client.ainvoke(HELLO)  # plain messages: no template
    names = ["controller", "verifier", "rankgpt", "nli.feverous", "fact_extraction", "verifier", None]
    sent = [h.get("x-claire-prompt") for h in openai_server.headers]
    project = [(k, v) for h in openai_server.headers for k, v in h.items() if "claire" in f"{k} {v}".lower()]
    if prompt_header:  # a test asked for the template's name: it travels as a header
        assert sent == names
    else:  # by default nothing of CLAIRE's own goes to an endpoint
        assert sent == [None] * len(names) and project == []
    # either way the test server knows each request's template (from the header, or from its wording)
    assert [r.get("claire_prompt") for r in openai_server.requests] == names
    assert [kind_of(r) for r in openai_server.requests[:5]] == ["controller", "verifier", "rankgpt", "feverous_nli", "extract"]
    calls = openai_server.calls
    assert (await client.ainvoke(prompts[1])).response_metadata.get("claire_cache_hit")
    assert openai_server.calls == calls
    await client.aclose()




# -- what providers bill: their prompt caches -----------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
async def test_the_cached_tokens_an_endpoint_reports_are_counted_and_priced(stream):
    instructions = SystemMessage("Fixed instructions that every request repeats. " * 150)  # ~1,800 tokens
    with MockOpenAIServer(prompt_cache=True) as server:
        client = client_for(server, model="gpt-4o-mini", stream=stream)
        with track_usage() as usage:
            for question in ("first question", "second question"):
                await client.ainvoke([instructions, HumanMessage(question)])
        await client.aclose()
    first, second = server.cached_tokens
    assert first == 0 and second >= 1024 and second % 128 == 0  # OpenAI's rule: from 1,024 tokens in 128s
    assert usage.cache_read_tokens == second and usage.prompt_tokens == sum(server.prompt_tokens)
    fresh = usage.prompt_tokens - second
    assert usage.cost_usd == pytest.approx((fresh * 0.15 + second * 0.075 + usage.completion_tokens * 0.60) / 1e6)


# -- answers that are hard to read ----------------------------------------------------------------
async def test_half_a_surrogate_pair_in_an_answer_is_read(openai_server, tmp_path):
    openai_server.script({"content": "<inconsistency_score>0.7</inconsistency_score> broken \ud800 text"})
    client = client_for(openai_server, tmp_path)
    answer = await client.ainvoke(HELLO)  # read, not retried as a garbled answer
    assert "<inconsistency_score>0.7</inconsistency_score> broken" in text_of(answer) and openai_server.calls == 1
    assert (await client.ainvoke(HELLO)).response_metadata.get("claire_cache_hit")  # and it could be cached
    await client.aclose()


@pytest.mark.parametrize("damage", ["not json at all", '[{"message": {"type": "ai", "data": {"content": 5}}}]',
                                    '{"answer": "wrong shape"}', '[]'])
async def test_a_broken_cache_row_is_a_miss_and_is_replaced(openai_server, tmp_path, damage):
    import sqlite3

    openai_server.script({"content": "first"}, {"content": "asked again"})
    client = client_for(openai_server, tmp_path)
    assert text_of(await client.ainvoke(HELLO)) == "first"
    await client.aclose()
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        db.execute("UPDATE answers SET answer = ?", (damage,))
    client = client_for(openai_server, tmp_path)
    assert text_of(await client.ainvoke(HELLO)) == "asked again"  # the model, not an endpoint blamed forever
    await client.aclose()
    client = client_for(openai_server, tmp_path)
    hit = await client.ainvoke(HELLO)  # the fresh answer replaced the broken row
    assert hit.response_metadata.get("claire_cache_hit") and text_of(hit) == "asked again"
    assert openai_server.calls == 2
    await client.aclose()


# -- how many of CLAIRE's modules one call passes -------------------------------------------------
async def test_one_call_passes_at_most_four_claire_modules(openai_server, tmp_path):
    import sys
    from pathlib import Path

    import claire

    root = str(Path(claire.__file__).parent) + "/"
    seen: dict[str, set[str]] = {}

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        # CLAIRE's own modules (a virtualenv inside the checkout, as CI makes one, and the tests are not)
        if event == "call" and name.startswith(root) and "site-packages" not in name and not name.startswith(root + "tests/"):
            seen.setdefault(name[len(root):], set()).add(frame.f_code.co_name)

    client = client_for(openai_server, tmp_path, record=tmp_path / "calls.jsonl")  # cache and recording on
    await client.ainvoke(HELLO)  # warm: the first call builds what every later call reuses
    openai_server.script({"content": "a fresh answer"}, {"fault": "500"}, {"content": "after a retry"})
    with track_usage():
        sys.setprofile(profile)
        try:
            await client.ainvoke([HumanMessage("a question")])
        finally:
            sys.setprofile(None)
        plain = sorted(seen)
        seen.clear()
        sys.setprofile(profile)
        try:
            await client.ainvoke([HumanMessage("another question")])  # a 500, then an answer
        finally:
            sys.setprofile(None)
        retried = sorted(seen)
    await client.aclose()
    print("one call:", plain, "\na retried call:", retried)
    assert plain == ["llm/cache.py", "llm/cassette.py", "llm/client.py", "usage.py"]
    assert set(retried) - set(plain) == {"retrying.py"}  # the wait between tries: the one retry policy


async def test_a_recorded_cassette_replays_for_its_model_only(openai_server, tmp_path):
    from claire.testing.cassette import CassetteResponder

    openai_server.script({"content": "<inconsistency_score>0.3</inconsistency_score>"})
    recording = client_for(openai_server, model="small-model", record=tmp_path / "calls.jsonl")
    await recording.ainvoke(HELLO)
    await recording.aclose()  # waits for the line to be written
    cassette = CassetteResponder(tmp_path / "calls.jsonl")
    assert cassette.models == ["small-model"]
    with MockOpenAIServer(cassette) as replay:
        same = client_for(replay, model="small-model")
        assert text_of(await same.ainvoke(HELLO)) == "<inconsistency_score>0.3</inconsistency_score>"
        other = client_for(replay, model="gpt-4o")
        with pytest.raises(LLMError, match="model 'gpt-4o' was not found.*recorded with small-model, not gpt-4o"):
            await other.ainvoke(HELLO)
        await same.aclose()
        await other.aclose()
    assert (cassette.exact, cassette.refused) == (1, 1)


@pytest.mark.parametrize("usage", [{"completion_tokens": "abc"}, {"completion_tokens": -20_000_000},
                                   {"prompt_tokens_details": {"cached_tokens": "many"}},
                                   {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 500}}])
async def test_impossible_usage_figures_are_dropped_and_the_answer_kept(openai_server, usage):
    """Usage is the endpoint's advice: what no call could have is dropped or clamped, noted once,
    and the good answer beside it is read."""
    openai_server.script({"content": "the answer", "usage": usage})
    client = client_for(openai_server)
    with track_usage() as tally:
        answer = await client.ainvoke(HELLO)
    assert text_of(answer) == "the answer"
    assert tally.events.get("usage_fixed") == 1
    assert tally.completion_tokens >= 0 and 0 <= tally.cache_read_tokens <= tally.prompt_tokens
    await client.aclose()
