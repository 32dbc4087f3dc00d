"""Over-long facts: a warning above a sentence or two, refused above agent.max_fact_chars with a
pointer to `claire scan` — in the library, and through the real `claire` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from claire.tasks.fact_limits import check_claims, check_fact
from claire.errors import ClaireError, ConfigError, DatasetError
from claire.workflows.scan import facts_within_limit

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
PASTED = "The tower was built in 1889 by Gustave Eiffel's company. " * 900  # ~50 KB pasted by mistake


def claire(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAIRE_", "OPENAI_"))}
    env.update({"CLAIRE_CACHE_DIR": str(cache), "CLAIRE_DATA_DIR": str(cache), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "OPENAI_API_KEY": "sk-x"})
    return subprocess.run([sys.executable, "-m", "claire.cli", *args], capture_output=True, text=True, env=env,
                          timeout=180, stdin=subprocess.DEVNULL)


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


