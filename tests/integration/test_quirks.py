"""What CLAIRE does with what real models emit, one test per quirk, over real HTTP: the mock
OpenAI server in quirks mode (``claire.testing.quirks``) answers the way real models do, and each
test shows CLAIRE recovering (a lenient read, a re-ask, a polite end) or ending the claim with a
clear error, and counting what it took (``usage["events"]``)."""

from __future__ import annotations

import pytest

from claire.agent.runtime import build_system
from claire.config import Config
from claire.settings import LLMConfig
from claire.llm.client import ChatClient
from claire.testing.doubles import CLAIM, KeywordRetriever, http_responder
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.quirks import QUIRKS, quirky


async def assess(quirk: str, system: str = "claire", **agent: object):
    """The assessment of the planted claim (1890 against 1889) by ``system`` over a mock server
    answering with ``quirk``, and the server's requests."""
    with MockOpenAIServer(quirky(http_responder(), quirk)) as server:
        llm = ChatClient.from_config(LLMConfig(model="quirky-model", base_url=server.base_url, api_key="sk-quirks",
                                               cache=False, max_attempts=3, retry_base_wait=0.0, retry_max_wait=0.0))
        # the responder ends its research with finish(), offered here (the paper preset has none)
        config = Config().with_overrides({"retrieval.rerank": False, "agent.finish_action": True,
                                          **{f"agent.{k}": v for k, v in agent.items()}})
        try:
            result = await build_system(config, llm=llm, retriever=KeywordRetriever(), name=system).assess(CLAIM)
        finally:
            await llm.aclose()
        return result, server.requests


def events(result) -> dict[str, int]:
    return result.usage.get("events") or {}


def actions(result) -> list[str]:
    return [item.action_name for item in result.trace]


def test_every_quirk_has_a_test():
    tested = {name.removeprefix("test_").removesuffix("_quirk") for name in globals() if name.endswith("_quirk")}
    assert tested == set(QUIRKS)


async def test_think_quirk():
    result, _ = await assess("think")
    assert result.error is None and result.score == pytest.approx(0.9)  # not the 0.0 inside the reasoning
    assert events(result)["reasoning_removed"] >= 3 and "<think>" not in (result.reasoning or "")


async def test_reasoning_only_quirk():
    result, requests = await assess("reasoning_only")
    # an answer that is all reasoning reads as empty: tried once more, which answers
    assert result.error is None and result.score == pytest.approx(0.9)
    assert events(result)["reasoning_removed"] == 1 and sum(r.get("claire_prompt") == "verifier" for r in requests) == 2


async def test_reasoning_field_quirk():
    result, _ = await assess("reasoning_field")
    assert result.error is None and result.score == pytest.approx(0.9) and not events(result)


async def test_text_tool_calls_quirk():
    result, _ = await assess("text_tool_calls", stop_on_report=False)  # research past the report: three calls to read
    assert result.error is None and actions(result)[:3] == ["search", "report_inconsistency", "finish"]
    assert events(result)["text_tool_call"] == 3 and result.score == pytest.approx(0.9)


async def test_malformed_arguments_quirk():
    result, _ = await assess("malformed_arguments")
    assert result.error is None and actions(result)[0] == "search"
    assert result.trace[0].action_argument == "Eiffel Tower completed 1889"  # the cut JSON closed again
    assert events(result)["arguments_fixed"] == 1


async def test_wrong_types_quirk():
    result, _ = await assess("wrong_types")
    assert result.trace[0].action_argument == "Eiffel Tower completed 1889" and events(result)["arguments_fixed"] == 1
    assert result.error is None and result.score == pytest.approx(0.9)


async def test_unknown_tool_quirk():
    result, _ = await assess("unknown_tool")
    assert actions(result)[0] == "browse_internet" and "not an available action" in result.trace[0].action_output
    assert events(result)["invalid_action"] == 1 and result.error is None and result.score == pytest.approx(0.9)


async def test_tool_name_case_quirk():
    result, _ = await assess("tool_name_case", stop_on_report=False)  # research past the report: three names to fix
    assert actions(result)[:3] == ["search", "report_inconsistency", "finish"] and events(result)["tool_name_fixed"] == 3


async def test_parallel_calls_quirk():
    result, requests = await assess("parallel_calls", stop_on_report=False, parallel_actions=True)
    # both searches run, one step each, in order; the second needed no LLM call of its own
    assert actions(result)[:3] == ["search", "search", "report_inconsistency"]
    assert result.trace[1].action_argument == "World's Fair Paris entrance arch"
    assert events(result)["parallel_calls"] == 1
    assert sum(r.get("claire_prompt") == "controller" for r in requests) == 3  # search+search, report, finish
    assert len({e.n for e in result.evidence}) == len(result.evidence)  # passages numbered once each


async def test_parallel_calls_quirk_takes_one_action_a_step_in_the_papers_controller():
    """The paper's controller takes one action a step: of an answer's two searches only the first
    runs, and that is counted; the next step is asked for as usual."""
    result, requests = await assess("parallel_calls", stop_on_report=False)
    assert actions(result)[:2] == ["search", "report_inconsistency"]
    assert events(result)["parallel_calls"] == 1 and events(result)["extra_actions_dropped"] == 1


async def test_length_quirk():
    result, requests = await assess("length")
    # "<inconsistency_score>0." was cut at the limit: not read as 0, but asked again
    assert result.score == pytest.approx(0.9) and events(result)["cut_answer"] == 1 and events(result)["reasked"] == 1
    follow_up = [r for r in requests if r.get("claire_prompt") == "verifier"][-1]["messages"][-1]["content"]
    assert "cut off" in follow_up


async def test_empty_quirk():
    result, requests = await assess("empty")
    # empty once: tried again; empty twice: asked again in words, which answers
    assert result.score == pytest.approx(0.9)
    assert events(result)["empty_answer"] == 1 and events(result)["reasked"] == 1
    assert "Your answer was empty" in [r for r in requests if r.get("claire_prompt") == "verifier"][-1]["messages"][-1]["content"]


async def test_refusal_quirk():
    result, requests = await assess("refusal")
    assert result.score is None and result.verdict is None
    assert "declined to answer" in result.error and "can't help" in result.error
    assert events(result)["refusal"] == 1
    assert sum(r.get("claire_prompt") == "verifier" for r in requests) == 1  # a refusal is not retried


async def test_score_fraction_quirk():
    result, _ = await assess("score_fraction")
    assert result.score == pytest.approx(0.9) and result.error is None


async def test_score_words_quirk():
    result, _ = await assess("score_words", system="rav")
    assert result.score == pytest.approx(0.8) and result.verdict == "inconsistent" and events(result)["score_words"] == 1


async def test_label_language_quirk():
    clean, _ = await assess("reasoning_field", system="nli")
    result, _ = await assess("label_language", system="nli")
    assert result.error is None and result.details["counts"] == clean.details["counts"]
    assert result.details["counts"]["REFUTES"] >= 1 and not result.details["unparsed"]


async def test_plain_text_final_quirk():
    result, _ = await assess("plain_text_final")
    assert actions(result) == ["search", "finish", "verifier"]
    assert "without an action" in result.trace[1].action_output and events(result)["plain_text_end"] == 1
    assert result.error is None and result.score == pytest.approx(0.9)


async def test_plain_text_final_quirk_without_a_finish_action_is_asked_again():
    """The paper's controller offers no finish(): a final answer in prose does not end the research;
    it is asked again for an action at the cost of a step, and counted, until the budget ends it."""
    result, _ = await assess("plain_text_final", finish_action=False, max_steps=3)
    assert actions(result)[0] == "search" and actions(result)[-2:] == ["budget_exhausted", "verifier"]
    assert "invalid" in actions(result) and events(result)["asked_for_action"] >= 1
    assert "plain_text_end" not in events(result) and result.error is None
