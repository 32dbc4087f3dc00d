"""Over-long facts in the library: a warning above a sentence or two, refused above
agent.max_fact_chars with a pointer to `claire scan`, for one fact, a dataset's claims and extracted
facts (the `claire` command's refusals are in tests/integration/test_fact_limits.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from claire.tasks.fact_limits import check_claims, check_fact
from claire.errors import ClaireError, ConfigError, DatasetError
from claire.jobs.scan import facts_within_limit

PASTED = "The tower was built in 1889 by Gustave Eiffel's company. " * 900  # ~50 KB pasted by mistake


def test_short_long_and_too_long_facts():
    assert check_fact("The Eiffel Tower was completed in 1889.", 2000) is None
    warning = check_fact("word " * 100, 2000)
    assert warning and "more than a sentence or two" in warning and "claire scan" in warning
    with pytest.raises(ConfigError, match=r"51,300 characters long, over the limit of 2,000 .*claire scan"):
        check_fact(PASTED, 2000)
    assert check_fact(PASTED, 100_000)  # a raised limit lets it through, still with a warning


def test_dataset_claims_and_extracted_facts():
    claims = [SimpleNamespace(claim_id=f"c{i}", text=text) for i, text in enumerate(["short.", "x " * 300, PASTED])]
    with pytest.raises(DatasetError, match=r"dev\.json: 1 claim\(s\) are over the limit .*: c2;"):
        check_claims(claims, 2000, source="dev.json")
    assert check_claims(claims[:2], 2000, source="dev.json") == ["1 claim(s) of dev.json are longer than a sentence or two: c1"]
    facts = [SimpleNamespace(text="Paris is in France."), SimpleNamespace(text=PASTED)]
    assert [f.text for f in facts_within_limit(facts, 2000, None)] == ["Paris is in France."]
    with pytest.raises(ClaireError, match="every extracted fact"):
        facts_within_limit(facts[1:], 2000, None)


