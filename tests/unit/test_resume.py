"""An interactive check saved by the SQLite checkpointer and resumed by a new agent (as a new
process would), after the person stopped at the review question."""

from __future__ import annotations

import json

import pytest

from claire.agent.runtime import build_system
from claire.config import Config
from claire.errors import ConfigError
from claire.testing.doubles import CLAIM, KeywordRetriever, ScriptedModel, tool_call
from claire.testing.scripted import scripted_client


class Stopped(Exception):
    """The person closed the terminal at the review question."""


def agent_for(model, reviewer, path):
    config = Config().with_overrides({"retrieval.rerank": False, "agent.review": True, "agent.checkpoints": str(path)})
    return build_system(config, llm=scripted_client(model), retriever=KeywordRetriever(), name="claire", reviewer=reviewer)


async def test_interrupted_review_resumes_from_the_checkpointer(tmp_path):
    path = tmp_path / "checks.sqlite"
    flagged = "<analysis>[1] gives 1889.</analysis><inconsistency_score>0.9</inconsistency_score>"
    first_model = ScriptedModel([tool_call("search", "Eiffel Tower"), tool_call("report_inconsistency", "[1] says 1889")],
                                verifier=flagged)

    async def walks_away(case):
        raise Stopped()

    with pytest.raises(Stopped):
        await agent_for(first_model, walks_away, path).assess(CLAIM, thread_id="t-1")
    assert path.is_file() and len(first_model.requests("verifier")) == 1

    asked = []

    async def rejects(case):
        asked.append(case)
        return {"decision": "reject", "comment": None}  # no comment: the research is not sent on

    later_model = ScriptedModel([tool_call("finish")])
    result = await agent_for(later_model, rejects, path).resume("t-1")
    assert asked and asked[0]["reports"] == ["[1] says 1889"] and asked[0]["score"] == 0.9  # the pending question, again
    assert [t.action_name for t in result.trace][-2:] == ["verifier", "human_review"]
    assert result.claim_id == CLAIM.claim_id and result.details["thread_id"] == "t-1"
    assert not later_model.requests("controller") and not later_model.requests("verifier")  # nothing was redone
    assert result.details["review"]["verdict"] == "consistent" and result.verdict == "inconsistent"
    assert [e.block_id for e in result.evidence]  # gathered before the interruption, kept

    with pytest.raises(ConfigError, match="no saved check 'nope'"):
        await agent_for(ScriptedModel(), rejects, path).resume("nope")


def test_a_setting_added_since_a_run_at_its_default_does_not_stop_it_resuming():
    from claire.agent.runtime import run_settings
    from claire.config import Config
    from claire.evals.runner import config_differences

    current = run_settings(Config())
    stored = json.loads(json.dumps(current))
    del stored["resolve"]["margin"]  # a run made before the setting existed
    assert config_differences(stored, current) == []
    changed = run_settings(Config().with_overrides({"resolve.margin": 0.3}))
    assert config_differences(stored, changed) == ["resolve.margin: None -> 0.3"]
