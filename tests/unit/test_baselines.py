"""Retrieve-and-verify and the NLI pipeline driven by a scripted model over a keyword retriever."""

from __future__ import annotations

import asyncio

import pytest

from claire.llm.answers import nli_label as parse_nli_label
from claire.agent.runtime import build_system
from claire.config import Config
from claire.errors import LLMError
from claire.testing.doubles import BLOCKS, CLAIM, KeywordRetriever, ScriptedModel, kind_of, tool_call
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
        "texas-1": "banana",  # unreadable: asked once more, then counted as NOT ENOUGH INFO and recorded
    }

    def nli(request):
        judged = request.messages[1].content.split("<document>", 1)[1]  # the passage judged, after the claim's own
        block = next(b for b in BLOCKS if b.content in judged)
        return answers[block.id]

    system, llm, _ = make("nli", ScriptedModel(nli=nli))
    arrived, everyone = [], asyncio.Event()
    answer = llm.ainvoke

    async def gathered(prompt, **kwargs):  # the NLI calls must overlap: each waits until all four are in
        arrived.append(prompt)
        if len(arrived) >= 4:
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
    assert len(arrived) == 5  # four passages, and the unreadable answer asked once more
    assert "I could not read your answer" in arrived[-1][-1].content and result.usage["events"] == {"reasked": 1}


async def test_every_system_gives_the_model_the_claims_passage():
    nli_model, rav_model = ScriptedModel(nli="<label>NOT ENOUGH INFO</label>"), ScriptedModel()
    await make("nli", nli_model)[0].assess(CLAIM)
    await make("rav", rav_model)[0].assess(CLAIM)
    passage = f"<passage>\n{CLAIM.context.content}\n</passage>"
    requests = nli_model.requests("nli")
    assert len(requests) == 4 and all(passage in r.messages[1].content for r in requests)
    assert passage in rav_model.requests("verifier")[0].messages[1].content  # as retrieve-and-verify has it
    # the claim and its passage come first, the passage judged last: the calls of one claim share their start
    first, second = (r.messages[1].content for r in requests[:2])
    shared = first.split("The retrieved passage", 1)[0]
    assert second.startswith(shared) and first != second


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
    from claire.domain import Passage
    from claire.domain import Evidence
    from claire.prompts import library
    from claire.testing.scripted import ScriptedRequest

    messages = library().render("nli", claim="c", context=Passage(document_title="t"),
                                document=Evidence(n=1, block_id="b", document_title="d", content="x"))
    assert kind_of(ScriptedRequest(messages=list(messages))) == "nli"  # by its wording, without the name


async def test_the_cascade_keeps_low_first_pass_scores_and_sends_the_rest_to_claire():
    from claire.agent.cascade import cut_for_recall
    from claire.config import Config
    from claire.agent.runtime import build_system
    from claire.testing.scripted import scripted_client

    scores = iter(["0.05", "0.6", "0.9"])  # rav's verdict, then claire's verifier
    model = ScriptedModel([tool_call("search", "Eiffel Tower completed")],
                          verifier=lambda request: f"<analysis>[1]</analysis><inconsistency_score>{next(scores)}</inconsistency_score>")
    config = Config().with_overrides({"retrieval.rerank": False, "agent.cascade_cut": 0.2, "agent.finish_action": True})
    cascade = build_system(config, llm=scripted_client(model), retriever=KeywordRetriever(), name="cascade")
    low = await cascade.assess(CLAIM)  # rav says 0.05: below the cut, claire never runs
    assert low.system == "cascade" and low.score == pytest.approx(0.05) and low.details["stage"] == "first pass"
    assert [t.action_name for t in low.trace] == ["search", "verifier"] and low.usage["calls"] == 1
    high = await cascade.assess(CLAIM)  # rav says 0.6: claire researches and decides
    assert high.details["stage"] == "claire" and high.details["first_score"] == pytest.approx(0.6)
    assert high.score == pytest.approx(0.9) and high.verdict == "inconsistent"
    assert [t.action_name for t in high.trace][:2] == ["search", "verifier"] and "finish" in [t.action_name for t in high.trace]
    assert high.usage["calls"] == 4  # rav's verifier, claire's two controller steps and its verifier
    # the cut keeps the asked-for share of a validation run's inconsistent facts
    lines = [{"label": "inconsistent", "system": "rav", "score": s, "error": None} for s in (0.1, 0.3, 0.5, 0.7)]
    lines.append({"label": "consistent", "system": "rav", "score": 0.0, "error": None})
    assert cut_for_recall(lines, 1.0) == 0.1 and cut_for_recall(lines, 0.75) == 0.3
    nli = [{"label": "inconsistent", "system": "nli", "score": 2, "details": {"refutes_fraction": 0.1}, "error": None}]
    assert cut_for_recall(nli, 0.95) == 0.1
