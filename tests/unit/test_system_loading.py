"""A system of one's own is named package.module:Class (or by an installed package's entry point),
and a bad name is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest



def test_a_system_of_ones_own_is_named_package_module_class_and_bad_names_are_one_clear_error(tmp_path, monkeypatch):
    """--system package.module:Class loads a system written outside CLAIRE, checked for
    what a system declares; the configuration accepts the name without loading it."""
    from claire.agent.registry import score_kind, system_class
    from claire.config import load_config
    from claire.errors import ConfigError

    (tmp_path / "my_systems.py").write_text(
        "class Counting:\n    name = 'counting'\n    score_kind = 'count'\n"
        "    @classmethod\n    def from_config(cls, parts):\n        return cls()\n"
        "    async def assess(self, claim):\n        raise NotImplementedError\n"
        "class NotASystem:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert system_class("my_systems:Counting").name == "counting" and score_kind("my_systems:Counting") == "count"
    assert load_config(None, {"agent.system": "my_systems:Counting"}).agent.system == "my_systems:Counting"
    for name, problem in (("my_systems:Missing", "has no Missing"), ("my_systems:NotASystem", "not a CLAIRE system"),
                          ("nowhere.at_all:Thing", "cannot import nowhere.at_all"), ("not a name", "unknown system")):
        with pytest.raises(ConfigError, match=problem):
            system_class(name)


def test_a_system_an_installed_package_names_is_found_by_that_name(tmp_path, monkeypatch):
    """A researcher's package registers its system in the claire.systems entry-point group and it
    is named like a built-in one; a built-in name cannot be taken over."""
    from claire.agent.registry import installed_systems, system_class
    from claire.config import load_config
    from claire.errors import ConfigError
    from claire.testing.doubles import installed_package

    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    site = installed_package(tmp_path / "site", "claire_numbers",
                             {"numbers": "number_check:NumberCheck", "claire": "number_check:NumberCheck"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(examples))
    found = installed_systems()
    assert found["numbers"] == "number_check:NumberCheck" and "claire" not in found
    assert system_class("numbers").name == "number_check"
    assert system_class("claire").name == "claire"
    assert load_config(None, {"agent.system": "numbers"}).agent.system == "numbers"
    with pytest.raises(ConfigError, match="the installed .*numbers"):
        load_config(None, {"agent.system": "nonesuch"})
