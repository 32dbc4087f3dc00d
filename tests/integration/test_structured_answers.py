"""Structured answers over real HTTP: with llm.structured = "auto" a fixed-shape answer is asked for
as JSON and its schema travels as response_format; an endpoint that refuses schemas is asked without
one, once, and remembered; one that ignores them is read as tags; a JSON answer that does not fit its
shape is asked again with the validation error and never becomes a score."""

from __future__ import annotations

import json

import pytest

from claire.agent.runtime import prompt_library
from claire.config import load_config
from claire.settings import LLMConfig
from claire.domain import Evidence
from claire.llm import client as llm_client
from claire.llm.client import ChatClient
from claire.usage import track_usage
from claire.tasks.wikicollide.judge import judge_score
from claire.testing.doubles import CLAIM
from claire.testing.mock_openai import MockOpenAIServer

DOCS = [Evidence(n=1, block_id="b1", document_title="Eiffel Tower", section_title="History",
                 content="The tower was completed in March 1889.")]
TAGGED = "<restated_claim>r</restated_claim><analysis>[1] gives 1889.</analysis><inconsistency_score>0.85</inconsistency_score>"


def client_for(server: MockOpenAIServer) -> ChatClient:
    return ChatClient.from_config(LLMConfig(model="test-model", base_url=server.base_url, api_key="sk-test-secret",
                                            timeout=5.0, max_attempts=2, retry_base_wait=0.01, retry_max_wait=0.02,
                                            cache=False))


def structured_prompts():
    return prompt_library(load_config(None, {"llm.structured": "auto"}))


@pytest.fixture(autouse=True)
def forget_refusals():
    llm_client.SCHEMA_REFUSED.clear()
    yield
    llm_client.SCHEMA_REFUSED.clear()


async def test_the_verifier_asks_for_json_with_its_schema_and_reads_the_score():
    with MockOpenAIServer(lambda body: {"content": TAGGED}) as server:  # the server writes the schema's JSON
        client = client_for(server)
        verdict = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert verdict.score == pytest.approx(0.85) and verdict.analysis == "[1] gives 1889."
    request = server.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    schema = request["response_format"]["json_schema"]
    assert schema["name"] == "verifier_answer" and schema["schema"]["properties"]["inconsistency_score"]["maximum"] == 1
    system = request["messages"][0]["content"]
    assert "one JSON object with exactly these keys" in system and '"inconsistency_score"' in system
    assert "<inconsistency_score>" not in system


async def test_the_paper_preset_sends_no_schema_and_asks_for_tags():
    with MockOpenAIServer(lambda body: {"content": TAGGED}) as server:
        client = client_for(server)
        verdict = await judge_score(CLAIM, DOCS, [], client, prompt_library(load_config(None, {})))
        await client.aclose()
    assert verdict.score == pytest.approx(0.85)
    assert "response_format" not in server.requests[0] and "<inconsistency_score>" in server.requests[0]["messages"][0]["content"]


async def test_an_endpoint_that_refuses_schemas_is_asked_without_once_and_remembered():
    with MockOpenAIServer(lambda body: {"content": json.dumps({"restated_claim": "r", "analysis": "a",
                                                               "inconsistency_score": 0.3})}, schemas="refuse") as server:
        client = client_for(server)
        with track_usage() as usage:
            first = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
            second = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert first.score == second.score == pytest.approx(0.3)
    # json_schema refused (HTTP 400), then json_object with the schema refused, then asked without one; the
    # next claim goes without one at once
    assert [(r.get("response_format") or {}).get("type") for r in server.requests] == ["json_schema", "json_object", None, None]
    assert usage.events["schema_refused"] == 2 and llm_client.SCHEMA_REFUSED[server.base_url] == 2


async def test_a_server_that_takes_the_schema_as_a_json_object_gets_it_so():
    """llama-cpp-python's server answers OpenAI's json_schema with HTTP 500 and takes the schema as
    {"type": "json_object", "schema": ...}: one refusal, no retries of the 500, then every request that way."""
    with MockOpenAIServer(lambda body: {"content": TAGGED}, schemas="json_object") as server:
        client = client_for(server)
        with track_usage() as usage:
            first = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
            second = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert first.score == second.score == pytest.approx(0.85) and first.error is None
    assert [(r.get("response_format") or {}).get("type") for r in server.requests] == ["json_schema", "json_object", "json_object"]
    assert server.requests[1]["response_format"]["schema"]["title"] == "VerifierAnswer"
    assert usage.events["schema_refused"] == 1 and "schema_ignored" not in usage.events


async def test_an_endpoint_that_ignores_the_schema_is_read_as_tags_and_counted():
    with MockOpenAIServer(lambda body: {"content": TAGGED}, schemas="ignore") as server:
        client = client_for(server)
        with track_usage() as usage:
            verdict = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert verdict.score == pytest.approx(0.85) and usage.events["schema_ignored"] == 1


async def test_a_json_answer_that_does_not_fit_is_asked_again_with_the_error_then_fails():
    bad = json.dumps({"restated_claim": "r", "analysis": "a", "inconsistency_score": 1.7})
    with MockOpenAIServer(lambda body: {"content": bad}) as server:
        client = client_for(server)
        with track_usage() as usage:
            verdict = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert verdict.score is None and "less than or equal to 1" in verdict.error  # the reason, never a score
    assert len(server.requests) == 2 and usage.events["schema_invalid"] == 2 and usage.events["reasked"] == 1
    follow_up = server.requests[1]["messages"][-1]["content"]
    assert "did not have the shape" in follow_up and "less than or equal to 1" in follow_up
    assert "response_format" in server.requests[1]  # the follow-up is held to the schema too


async def test_a_json_answer_fixed_on_the_second_try_is_read():
    answers = iter([json.dumps({"restated_claim": "r", "analysis": "a", "inconsistency_score": "high"}),
                    json.dumps({"restated_claim": "r", "analysis": "a", "inconsistency_score": 0.7})])
    with MockOpenAIServer(lambda body: {"content": next(answers)}) as server:
        client = client_for(server)
        verdict = await judge_score(CLAIM, DOCS, [], client, structured_prompts())
        await client.aclose()
    assert verdict.score == pytest.approx(0.7) and verdict.error is None


async def test_every_fixed_shape_answer_of_a_practical_run_goes_as_json(tmp_path):
    """The practical preset's systems end to end against the oracle: every request whose template has an
    answer shape carries its schema, and every claim gets its score."""
    from claire.agent.runtime import open_system
    from claire.evals.runner import run_eval
    from claire.tasks.wikicollide.dataset import load_wikicollide
    from claire.testing.oracle import oracle_responder
    from pathlib import Path

    mini = Path(__file__).resolve().parents[1] / "fixtures" / "wikicollide_mini.json"
    records = load_wikicollide(mini)[:3]
    with MockOpenAIServer(oracle_responder(mini), model="oracle", prompt_cache=False) as server:
        for system in ("rav", "nli"):
            config = load_config(None, {"preset": "practical", "agent.system": system, "llm.base_url": server.base_url,
                                        "llm.api_key": "sk-x", "llm.model": "oracle", "llm.cache": False,
                                        "llm.prompt_header": True, "retrieval.rerank": True})
            async with open_system(config) as opened:
                summary = await run_eval(records, opened, tmp_path / system, concurrency=2, show_progress=False)
            assert summary.errors == 0, system
    shaped = [r for r in server.requests if r.get("claire_prompt", "").split(".")[0] in ("verifier", "nli", "rankgpt")]
    assert shaped and all("response_format" in r for r in shaped)


async def test_an_nli_answer_that_never_fits_fails_the_claim_with_the_validation_error(tmp_path):
    """An NLI label outside the schema is never counted (not even as NOT ENOUGH INFO): the claim fails,
    and its error is the validation error."""
    from claire.agent.runtime import open_system
    from claire.evals.runner import run_eval
    from claire.tasks.wikicollide.dataset import load_wikicollide
    from claire.testing.oracle import oracle_responder
    from pathlib import Path

    mini = Path(__file__).resolve().parents[1] / "fixtures" / "wikicollide_mini.json"
    records = load_wikicollide(mini)[:1]
    oracle = oracle_responder(mini)

    def responder(body):
        if body.get("claire_prompt", "").startswith("nli"):
            return {"content": json.dumps({"label": "MAYBE", "reason": "unsure"})}
        return oracle(body)

    with MockOpenAIServer(responder, model="oracle", prompt_cache=False) as server:
        config = load_config(None, {"preset": "practical", "agent.system": "nli", "llm.base_url": server.base_url,
                                    "llm.api_key": "sk-x", "llm.model": "oracle", "llm.cache": False,
                                    "llm.prompt_header": True})
        async with open_system(config) as opened:
            summary = await run_eval(records, opened, tmp_path / "nli", concurrency=1, show_progress=False)
    assert summary.errors == 1
    line = json.loads((tmp_path / "nli" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert line["score"] is None
    assert "nli_label did not fit its schema" in line["error"] and "Input should be 'SUPPORTS'" in line["error"]
