"""An endpoint that fails: a dead or hanging one fails fast for later calls until a probe gets
through, an outage is unavailable and counted while a bad request is not, a refused connection is
tried again and said, and a huge passage is refused before any call."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from claire.llm.client import ChatClient
from claire.config import load_config
from claire.errors import ConfigError, LLMError
from claire.agent.extraction import MAX_PASSAGE_BYTES, extract_facts
from claire.llm.answers import text_of
from claire.prompts import library
from claire.testing.scripted import scripted_client


async def test_a_dead_endpoint_fails_fast_for_later_calls():
    config = load_config(overrides={"llm.base_url": "http://127.0.0.1:9/v1", "llm.api_key": "k",
                                               "llm.max_attempts": 4, "llm.retry_base_wait": 0.01,
                                               "llm.retry_max_wait": 0.01, "llm.cache": False})
    llm = ChatClient.from_config(config.llm)
    try:
        with pytest.raises(LLMError, match="after 4 attempt"):
            await llm.ainvoke([HumanMessage("hi")])
        with pytest.raises(LLMError, match="did not answer 0 s ago; not trying again"):
            await llm.ainvoke([HumanMessage("hi again")])
    finally:
        await llm.aclose()


async def test_a_hanging_endpoint_fails_fast_until_a_probe_gets_through():
    from claire.llm.client import PROBE_AFTER

    hang = TimeoutError("read timed out")
    llm = scripted_client([hang, hang, "fine"], max_attempts=3)
    now = [1000.0]
    llm.clock = lambda: now[0]
    # the first call waits one timeout, not max_attempts of them: another try would only hang again
    with pytest.raises(LLMError, match=r"after 1 attempt.*timeout.*not tried again.*server is running"):
        await llm.ainvoke([HumanMessage("first")])
    assert llm.endpoint_down and len(llm.model.requests) == 1
    now[0] += 5  # moments later: the rest of the claim and the run fail at once, with no request
    with pytest.raises(LLMError, match="did not answer 5 s ago; not trying again"):
        await llm.ainvoke([HumanMessage("second")])
    assert len(llm.model.requests) == 1
    now[0] += PROBE_AFTER  # later: one try (a probe), which hangs again
    with pytest.raises(LLMError, match="after 1 attempt"):
        await llm.ainvoke([HumanMessage("third")])
    now[0] += PROBE_AFTER
    assert text_of(await llm.ainvoke([HumanMessage("fourth")])) == "fine" and not llm.endpoint_down
    assert len(llm.model.requests) == 3


async def test_an_endpoint_outage_is_unavailable_and_counted_a_bad_request_is_not():
    from claire.errors import LLMUnavailable
    from claire.usage import track_usage

    class Status(Exception):
        def __init__(self, status):
            super().__init__(f"HTTP {status}")
            self.status_code = status

    refused = ConnectionRefusedError("refused")
    llm = scripted_client([Status(503), Status(503), Status(401), refused, refused], max_attempts=2)
    with track_usage() as first:
        with pytest.raises(LLMUnavailable, match=r"after 2 attempt.*server error \(503\)"):
            await llm.ainvoke([HumanMessage("first")])  # the endpoint kept failing: worth asking later
    assert first.events == {"endpoint_unavailable": 1}  # counted in the scope of the check that met it
    with track_usage() as second:
        with pytest.raises(LLMError) as refused_key:
            await llm.ainvoke([HumanMessage("second")])  # the key: asking later would not help
    assert not isinstance(refused_key.value, LLMUnavailable) and "endpoint_unavailable" not in second.events
    with track_usage() as third:
        with pytest.raises(LLMUnavailable, match="cannot connect"):
            await llm.ainvoke([HumanMessage("third")])
    assert third.events == {"endpoint_unavailable": 1}


async def test_a_refused_connection_is_tried_again_and_said(caplog):
    refused = ConnectionRefusedError("connection refused")
    llm = scripted_client([refused, refused, "up now"], max_attempts=3)
    assert text_of(await llm.ainvoke([HumanMessage("hello")])) == "up now"  # a server starting up
    waiting = [r.getMessage() for r in caplog.records if "waiting for the LLM endpoint" in r.getMessage()]
    assert len(waiting) == 2 and "attempt 2 of 3" in waiting[0]  # said on each retry, not silent
    assert not llm.endpoint_down


async def test_extraction_refuses_a_huge_passage_before_any_call():
    llm = scripted_client([])
    with pytest.raises(ConfigError, match="MB limit"):
        await extract_facts(title="T", text="word " * (MAX_PASSAGE_BYTES // 5 + 10), llm=llm, prompts=library())
    assert llm.model.requests == []
