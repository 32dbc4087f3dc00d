"""Prompts fitted to the model's context window: counting, condensing, choosing passages, and a
full 10-step check against a local server that rejects any prompt over 8,192 tokens."""

from __future__ import annotations

import pytest


from claire.agent.runtime import open_system, prompt_library
from claire.config import Config
from claire.testing.doubles import CLAIM, kind_of
from claire.testing.mock_openai import MockOpenAIServer, prompt_tokens


QUERIES = ["Eiffel Tower construction history", "Gustave Eiffel career engineering", "Paris landmarks monuments",
           "Statue of Liberty design", "World's Fair 1889 exposition", "Golden Gate Bridge construction",
           "Apollo 11 moon landing crew", "Titanic sinking iceberg", "Great Wall of China length",
           "Mount Everest first ascent"]


def keeps_searching(body: dict) -> dict:
    """A model that never stops early: ten different searches, then a judgement and reports."""
    kind = kind_of(body)
    if kind == "controller":
        done = body["messages"][-1]["content"].count("<observation>")
        return {"tool_calls": [{"name": "search", "arguments": {"query": QUERIES[done % len(QUERIES)]}}]}
    if kind == "verifier":
        return {"content": "<restated_claim>r</restated_claim><analysis>[1] says 1889.</analysis>"
                           "<inconsistency_score>0.8</inconsistency_score>"}
    return {"content": f"A short {kind} answer."}


def searches_then_finishes(body: dict) -> dict:
    """Seven searches, then finish: the finishing call comes with a longer (so newly condensed) history."""
    if kind_of(body) == "controller" and body["messages"][-1]["content"].count("<observation>") >= 7:
        return {"tool_calls": [{"name": "finish", "arguments": {}}]}
    return keeps_searching(body)


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory, copy_demo_index):
    return copy_demo_index(tmp_path_factory.mktemp("indexes"))


async def test_ten_step_check_fits_an_8k_model(demo_root, clean_env):
    with MockOpenAIServer(keeps_searching, max_prompt_tokens=8192) as server:
        config = Config().with_overrides({
            "llm.base_url": server.base_url, "llm.model": "local-8k-model", "llm.api_key": "sk-test-key-0000",
            "llm.cache": False, "retrieval.path": str(demo_root), "retrieval.rerank": False,
            "agent.max_steps": 10, "agent.docs_per_query": 15, "agent.report": True,
        })
        async with open_system(config) as system:
            result = await system.assess(CLAIM)
        assert server.rejected == 0
        assert result.error is None and result.verdict == "inconsistent"
        names = [t.action_name for t in result.trace]
        assert names.count("search") == 10 and "budget_exhausted" in names
        notes = {t.action_argument: t.action_output for t in result.trace if t.action_name == "context_budget"}
        assert notes["controller"]["condensed_steps"] or notes["controller"]["omitted_steps"]
        assert notes["verifier"]["dropped"] and notes["verifier"]["kept"]
        assert set(notes) >= {"controller", "verifier", "report_consistent", "report_inconsistent"}
        assert max(server.prompt_tokens) <= 8192
        # the test means something: all gathered passages together would not have fitted
        prompts = prompt_library(config)
        uncut = prompts.render("verifier", claim=CLAIM.text, context=CLAIM.context, clarifications=[],
                               explanations=[], documents=result.evidence)
        uncut_body = {"messages": [{"role": m.type, "content": m.content} for m in uncut]}
        print("uncut verifier prompt tokens", prompt_tokens(uncut_body), "max sent", max(server.prompt_tokens))
        assert len(result.evidence) > 60 and prompt_tokens(uncut_body) > 8192
        # the latest observations reached the controller whole
        last_controller = [b for b in server.requests if kind_of(b) == "controller"][-1]["messages"][-1]["content"]
        assert last_controller.count("<observation>") == 9


async def test_a_finishing_step_keeps_the_history_note_it_made(demo_root, clean_env):
    """Every step shown live is in the final trace, including the context-budget note of the very
    controller call that chose finish."""
    with MockOpenAIServer(searches_then_finishes, max_prompt_tokens=8192) as server:
        config = Config().with_overrides({
            "llm.base_url": server.base_url, "llm.model": "local-8k-model", "llm.api_key": "sk-test-key-0000",
            "llm.cache": False, "retrieval.path": str(demo_root), "retrieval.rerank": False,
            "agent.max_steps": 10, "agent.docs_per_query": 15,
        })
        shown: list[dict] = []
        async with open_system(config, on_step=lambda event: shown.append(event["item"])) as system:
            result = await system.assess(CLAIM)
    steps = [(t.action_name, t.action_argument) for t in result.trace]
    finish = steps.index(("finish", None))
    assert [name for name, _ in steps].count("search") == 7 and steps[finish - 1] == ("context_budget", "controller")
    assert [t.action_name for t in result.trace] == [item["action_name"] for item in shown]
