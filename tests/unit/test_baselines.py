"""Retrieve-and-verify and the NLI pipeline driven by a scripted model over a keyword retriever."""

from __future__ import annotations

import asyncio

import pytest

from claire.llm.answers import nli_label as parse_nli_label
from claire.agent.runtime import build_system
from claire.config import Config
from claire.errors import LLMError
from claire.testing.doubles import BLOCKS, CLAIM, KeywordRetriever, ScriptedModel, kind_of
from claire.testing.scripted import scripted_client


def make(name: str, model, **overrides):
    config = Config().with_overrides({"retrieval.rerank": False, **overrides})
    llm = scripted_client(model)
    retriever = KeywordRetriever()
    return build_system(config, llm=llm, retriever=retriever, name=name), llm, retriever


async def test_rav_verifies_one_search_with_the_shared_template():
    model = ScriptedModel(verifier="<restated_claim>r</restated_claim><analysis>[1] says 1889.</analysis><inconsistency_score>0.8</inconsistency_score>")
    rav, _, retriever = make("rav", model)
    result = await rav.assess(CLAIM)
    assert retriever.queries == [(CLAIM.text, "Paris", 20)]
    assert result.score == pytest.approx(0.8) and result.verdict == "inconsistent"
    assert [t.action_name for t in result.trace] == ["search", "verifier"]
    assert [k for k, _ in model.seen] == ["verifier"]
    prompt = model.requests("verifier")[0].messages
    assert "<documents>" in prompt[1].content and "Notes on entities" not in prompt[1].content
    assert result.usage["calls"] == 1


async def test_a_verifier_variant_applies_to_rav_too():
    model = ScriptedModel()
    rav, _, _ = make("rav", model, **{"prompts.variants": {"verifier": "strict"}})
    await rav.assess(CLAIM)
    assert "strict judge" in model.requests("verifier")[0].messages[0].content


async def test_nli_counts_refutes_concurrently_and_tolerates_bad_answers():
    answers = {
        "eiffel-1": "<label>REFUTES</label><reason>says 1889</reason>",
        "fair-1": "Contradicts the claim.",  # no tags: read leniently
        "eiffel-2": "<label>supports</label>",
        "texas-1": "banana",  # unreadable: counted as NOT ENOUGH INFO and recorded
    }

    def nli(request):
        block = next(b for b in BLOCKS if b.content in request.messages[1].content)
        return answers[block.id]

    system, llm, _ = make("nli", ScriptedModel(nli=nli))
    arrived, everyone = [], asyncio.Event()
    answer = llm.ainvoke

    async def gathered(prompt, **kwargs):  # the NLI calls must overlap: each waits until all four are in
        arrived.append(prompt)
        if len(arrived) == 4:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), timeout=10)
        return await answer(prompt, **kwargs)

    llm.ainvoke = gathered
    result = await system.assess(CLAIM)
    assert result.details["counts"] == {"SUPPORTS": 1, "REFUTES": 2, "NOT ENOUGH INFO": 1}
    assert result.score == 2 and result.verdict == "inconsistent" and result.threshold == 1
    assert result.details["refutes_fraction"] == pytest.approx(0.5)
    assert len(result.details["unparsed"]) == 1
    assert [t.action_name for t in result.trace] == ["search"] + ["nli"] * 4
    assert len(arrived) == 4


async def test_nli_threshold_is_a_count():
    model = ScriptedModel(nli="<label>REFUTES</label>")
    system, _, _ = make("nli", model, **{"baselines.nli_threshold": 5})
    result = await system.assess(CLAIM)
    assert result.score == 4 and result.verdict == "consistent"


async def test_baseline_llm_failure_is_recorded():
    model = ScriptedModel(verifier=LLMError("down"))
    rav, _, _ = make("rav", model)
    result = await rav.assess(CLAIM)
    assert result.score is None and "down" in result.error


@pytest.mark.parametrize("text, label", [
    ("<label>REFUTES</label><reason>x</reason>", "REFUTES"),
    ("<label> Not Enough Info. </label>", "NOT ENOUGH INFO"),
    ("SUPPORTS - the passage says so", "SUPPORTS"),
    ("The passage contradicts the fact.", "REFUTES"),
    ("<label>NEI</label>", "NOT ENOUGH INFO"),
    ("The passage does not contradict the fact.", "NOT ENOUGH INFO"),
    ("<label>NOT REFUTES</label>", "NOT ENOUGH INFO"),
    ("This is not inconsistent; SUPPORTS", "SUPPORTS"),
    ("???", None),
])
def test_parse_nli_label(text, label):
    assert parse_nli_label(text) == label


def test_kind_detection_covers_the_nli_template():
    from claire.indexes.corpus import Passage
    from claire.indexes.evidence import Evidence
    from claire.prompts import library
    from claire.testing.scripted import ScriptedRequest

    messages = library().render("nli", claim="c", context=Passage(document_title="t"),
                                document=Evidence(n=1, block_id="b", document_title="d", content="x"))
    assert kind_of(ScriptedRequest(messages=list(messages))) == "nli"  # by its wording, without the name
