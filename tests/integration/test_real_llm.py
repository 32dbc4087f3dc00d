"""Opt-in checks against a real model (slow; skipped unless asked for):

- ``CLAIRE_TEST_GGUF=/path/model.gguf`` runs the in-process llama.cpp backend (extra ``local``);
- ``CLAIRE_LOCAL_LLM_URL=http://127.0.0.1:8765/v1`` (from ``../shared/scripts/local-llm.sh``) runs
  one CLAIRE check end to end against that server on the demo index.

Neither asserts the model judges well (small local models do not); they assert the real path works
and the agent copes with real, messy output: an Assessment always comes back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from claire.agent.runtime import open_system
from claire.domain import Claim, Passage as ContextBlock
from claire.config import load_config
from claire.settings import LLMConfig
from claire.llm.answers import text_of
from claire.llm.client import ChatClient
from claire.usage import track_usage

GGUF = os.environ.get("CLAIRE_TEST_GGUF")
SERVER = os.environ.get("CLAIRE_LOCAL_LLM_URL")


@pytest.mark.local_llm
@pytest.mark.skipif(not GGUF or not Path(GGUF).is_file(), reason="set CLAIRE_TEST_GGUF to a .gguf file to run")
async def test_in_process_llama_cpp_backend(tmp_path):
    pytest.importorskip("llama_cpp")
    config = LLMConfig(provider="local", model="local", local_model_path=GGUF, max_tokens=16, cache=False)
    client = ChatClient.from_config(config)
    try:
        with track_usage() as usage:
            answer = await client.ainvoke([HumanMessage("Answer with one word: what colour is the sky?")])
    finally:
        await client.aclose()
    assert text_of(answer).strip() and usage.calls == 1 and usage.completion_tokens > 0


@pytest.mark.local_llm
@pytest.mark.skipif(not SERVER, reason="set CLAIRE_LOCAL_LLM_URL to a running local OpenAI-compatible server")
async def test_claire_check_against_a_real_small_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = load_config(overrides={
        "llm.base_url": SERVER, "llm.model": "local", "llm.timeout": 900.0, "llm.max_tokens": 400, "llm.cache": False,
        "agent.max_steps": 3, "agent.docs_per_query": 5, "retrieval.rerank": False,
    })
    claim = Claim(claim_id="apollo", text="Michael Collins walked on the Moon with Neil Armstrong during Apollo 11.",
                  context=ContextBlock(document_title="Neil Armstrong"))
    async with open_system(config) as system:
        result = await system.assess(claim)
    names = [item.action_name for item in result.trace]
    assert names[0] in ("search", "clarify_entity", "explain", "report_inconsistency", "finish", "invalid")
    assert "verifier" in names  # the research ended and the verifier judged it, whatever the model wrote
    assert result.score is not None or result.error  # a verdict, or a reason why there is none
