"""One spelling for each setting: a prompt variant is ``prompts.variants.TEMPLATE`` everywhere (as
report.md prints it), ``prompt_variant.TEMPLATE`` (the sweeps' spelling) is the same setting, and a
wrong key's error names the key, not the value."""

from __future__ import annotations

import pytest

from claire.config import load_config, parse_assignment
from claire.errors import ConfigError
from claire.evals.sweep import apply_overrides


@pytest.mark.parametrize("spelling", ["prompts.variants.verifier", "prompt_variant.verifier"])
def test_a_variant_has_one_meaning_whatever_its_spelling(spelling):
    key, value = parse_assignment(f"{spelling}=lenient")
    config = load_config(None, {key: value})
    assert config.prompts.variants == {"verifier": "lenient"}
    assert apply_overrides(load_config(None, {}), {spelling: "lenient"}, "sweep").prompts.variants == {"verifier": "lenient"}
    both = load_config(None, {"prompts.variants.controller": "practical", key: value})
    assert both.prompts.variants == {"controller": "practical", "verifier": "lenient"}


def test_a_wrong_key_is_named_not_its_value():
    with pytest.raises(ConfigError) as raised:
        load_config(None, {"llm.modle": "datesfirst"})
    assert "llm.modle: unknown setting" in str(raised.value) and "datesfirst" not in str(raised.value)
    with pytest.raises(ConfigError, match="unknown setting 'prompts.variants.a.b'"):
        load_config(None, {"prompts.variants.a.b": "x"})
