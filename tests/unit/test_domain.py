"""The domain: the verdict rule by score kind, and the one passage model with its thin views."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from pydantic import ValidationError

from claire.domain import Assessment, Block, Evidence, Passage, decide, flags, titled_passage


# -- the verdict rule -----------------------------------------------------------------------------
def test_a_probability_flags_above_the_threshold_and_a_count_from_it():
    assert decide(0.5, 0.5, "probability") == "consistent" and decide(0.51, 0.5, "probability") == "inconsistent"
    assert decide(1.0, 1, "count") == "inconsistent" and decide(0.0, 1, "count") == "consistent"
    assert decide(None, 0.5) is None
    assert flags(np.array([0.4, 0.5, 0.6]), 0.5).tolist() == [False, False, True]
    assert flags(np.array([0, 1, 2]), 1, "count").tolist() == [False, True, True]
    counted = Assessment(claim_id="c", system="any", claim_text="t", score=1.0, score_kind="count", threshold=1)
    counted.decide()
    assert counted.verdict == "inconsistent"  # the kind decides, not the system's name


def test_one_passage_model_with_thin_views():
    block = Block(id="b1", document_title="Paris", content="Text.", block_type="table")
    evidence = Evidence.from_hit(type("Hit", (), {"block": block, "score": 0.7})(), 3)
    assert isinstance(block, Passage) and isinstance(evidence, Passage)
    assert evidence.block_id == evidence.id == "b1" and evidence.n == 3 and evidence.score == 0.7
    assert Evidence(n=1, block_id="x", document_title="T").id == "x"  # the name traces and old runs use
    assert evidence.model_dump()["block_id"] == "b1"
    with pytest.raises(ValidationError):
        Block(id=" ", document_title="Paris", content="Text.")
    with pytest.raises(ValueError, match="content must not be empty"):
        titled_passage(Passage(document_title="Paris"))
    assert copy.deepcopy(evidence) is evidence  # frozen: LangGraph's copy of a tool's update is free
