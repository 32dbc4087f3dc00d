"""Every system by name, looked up in one place: ``claire`` (the agent), ``rav``
(retrieve-and-verify), ``nli`` (the NLI pipeline), ``cascade`` and ``cite`` (the citation checker,
which answers the citations task).

Each system's class declares what its scores are (``score_kind``: a probability-like score in
[0, 1], or a count), so a threshold is read the same way wherever the system is named — in a
configuration, a run directory or a sweep — without asking which system it is. The names are
listed here once (the configuration reads them at startup without loading any system); a class is
loaded on first use.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from claire.domain import ScoreKind
from claire.errors import ConfigError

SYSTEMS: dict[str, str] = {
    "claire": "claire.agent.claire_agent:ClaireAgent",
    "rav": "claire.agent.baselines:RetrieveAndVerify",
    "nli": "claire.agent.baselines:NLIPipeline",
    "cascade": "claire.agent.cascade:Cascade",
    "cite": "claire.agent.citation_checker:CitationChecker",
}
"""Each system's name and its class (``module:Class``)."""

SYSTEM_NAMES: tuple[str, ...] = tuple(SYSTEMS)


@cache
def system_class(name: str) -> Any:
    """The class of the system called ``name``; a clear error naming the choices otherwise."""
    if name not in SYSTEMS:
        raise ConfigError(f"unknown system '{name}'; allowed: {', '.join(SYSTEMS)}")
    module, _, cls = SYSTEMS[name].partition(":")
    return getattr(import_module(module), cls)


def score_kind(name: str | None) -> ScoreKind:
    """What the scores of the system called ``name`` are (an unknown or missing name: a probability)."""
    if not name or name not in SYSTEMS:
        return "probability"
    return system_class(name).score_kind
