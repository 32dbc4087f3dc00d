"""Every system by name, looked up in one place: ``claire`` (the agent), ``rav``
(retrieve-and-verify), ``nli`` (the NLI pipeline), ``cascade``, ``cite`` (the citation checker,
which answers the citations task) and ``resolve`` (which side of a contradiction is right, the sides task) — and any system written outside CLAIRE: named
``package.module:Class`` (in ``--system``, ``[agent] system`` or a sweep), or by the name an
installed package gives it in the ``claire.systems`` entry-point group.

A system declares itself on its class: its ``name``, whether it calls an LLM (``needs_llm``,
True unless it says otherwise), what its scores are (``score_kind``: a
probability-like score in [0, 1], or a count, so a threshold is read the same way wherever the
system is named), the task it answers when only one (``answers_task``), and how it is built from
the configuration (``from_config(parts)``, given :class:`~claire.agent.system.SystemParts`). The
built-in names are listed here once (the configuration reads them at startup without loading any
system); a class is loaded on first use.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

import claire.tasks.registry  # noqa: F401  (with this registry, the task and tool registries check their names too)
import claire.tools.registry  # noqa: F401
from claire.settings import register_name_check
from claire.domain import ScoreKind
from claire.errors import ConfigError

SYSTEMS: dict[str, str] = {
    "claire": "claire.agent.claire_agent:ClaireAgent",
    "rav": "claire.agent.baselines:RetrieveAndVerify",
    "nli": "claire.agent.baselines:NLIPipeline",
    "cascade": "claire.agent.cascade:Cascade",
    "cite": "claire.agent.citation_checker:CitationChecker",
    "resolve": "claire.resolving.resolver:Resolver",
}
"""Each system's name and its class (``module:Class``)."""

SYSTEM_NAMES: tuple[str, ...] = tuple(SYSTEMS)

EXTERNAL = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*:[A-Za-z_]\w*$")
"""A system written outside CLAIRE: ``package.module:Class``."""


ENTRY_POINTS = "claire.systems"
"""The entry-point group through which an installed package names its systems: in its
pyproject.toml, ``[project.entry-points."claire.systems"] my_method = "my_package.module:Class"``."""


def installed_systems() -> dict[str, str]:
    """The systems installed packages name in the ``claire.systems`` entry-point group (name ->
    ``module:Class``); a built-in name is never taken over."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINTS) if point.name not in SYSTEMS}


def _where(name: str) -> str | None:
    """The ``module:Class`` of the system called ``name`` (None: no system has that name)."""
    if name in SYSTEMS:
        return SYSTEMS[name]
    if EXTERNAL.match(name):
        return name
    return installed_systems().get(name)  # looked up only for a name that is neither of the above


def is_system_name(name: str) -> bool:
    """Whether ``name`` names a system: a built-in one, or one written outside CLAIRE (its module is
    loaded only when the system is built)."""
    return _where(name) is not None


def _unknown(name: str) -> str:
    installed = ", ".join(installed_systems())
    return (f"unknown system '{name}'; allowed: {', '.join(SYSTEM_NAMES)}"
            + (f", the installed {installed}" if installed else "")
            + ", or package.module:Class for a system of your own")


def _check_system_setting(value: str) -> str:
    """``agent.system`` names a system (see :func:`is_system_name`)."""
    if not is_system_name(value):
        raise ValueError(_unknown(value))
    return value


register_name_check("agent.system", _check_system_setting)


@cache
def system_class(name: str) -> Any:
    """The class of the system called ``name`` (a built-in name, ``package.module:Class``, or an
    installed package's name for it); a clear error naming the choices, or saying what is wrong with
    an outside system, otherwise."""
    where = _where(name)
    if where is None:
        raise ConfigError(_unknown(name))
    module, _, cls = where.partition(":")
    try:
        found = getattr(import_module(module), cls)
    except ImportError as error:
        raise ConfigError(f"system '{name}': cannot import {module} ({error}); is it on the Python path?") from None
    except AttributeError:
        raise ConfigError(f"system '{name}': {module} has no {cls}") from None
    except SystemExit as error:  # the module ended the program as it was imported
        raise ConfigError(f"system '{name}': importing {module} called sys.exit({error.code!r})") from None
    except Exception as error:  # noqa: BLE001 - the user's module broke at import: theirs, not CLAIRE's
        first = (str(error).strip().splitlines() or [""])[0]
        raise ConfigError(f"system '{name}': importing {module} failed: {type(error).__name__}: {first}"[:500]) from None
    missing = [attr for attr in ("from_config", "assess") if not callable(getattr(found, attr, None))]
    if missing:
        raise ConfigError(f"system '{name}' is not a CLAIRE system: it has no {' or '.join(missing)} (see the docs' "
                          "page on systems of your own)")
    if getattr(found, "score_kind", "probability") not in ("probability", "count"):
        raise ConfigError(f"system '{name}': score_kind must be 'probability' or 'count'")
    return found


def score_kind(name: str | None) -> ScoreKind:
    """What the scores of the system called ``name`` are (a missing name, or a system that cannot be
    loaded here: a probability)."""
    if not name or not is_system_name(name):
        return "probability"
    try:
        return getattr(system_class(name), "score_kind", "probability")
    except ConfigError:
        return "probability"


def needs_llm(name: str | None) -> bool:
    """Whether the system called ``name`` calls an LLM (what its class declares in ``needs_llm``;
    True when it declares nothing or cannot be loaded here): a system that needs none is run
    without an endpoint, and its search without the LLM's reranking."""
    if not name or not is_system_name(name) or name in SYSTEMS:  # every built-in system calls one: known without
        return True                                                 # importing it (a missing key is said at once)
    try:
        return bool(getattr(system_class(name), "needs_llm", True))
    except ConfigError:
        return True


def reads_setting(name: str | None, key: str) -> bool:
    """Whether the system called ``name`` reads the setting ``key`` (a dotted key): what it declares in
    ``reads`` (setting prefixes); a system that declares nothing, or cannot be loaded here, reads all."""
    if not name or not is_system_name(name) or name in SYSTEMS:  # every built-in system calls one: known without
        return True                                                 # importing it (a missing key is said at once)
    try:
        prefixes = getattr(system_class(name), "reads", None)
    except ConfigError:
        return True
    return prefixes is None or key.startswith(tuple(prefixes))


def systems_answering(task: str) -> tuple[str, ...]:
    """The built-in systems that answer ``task``: all but those that answer only another task."""
    return tuple(name for name in SYSTEMS if getattr(system_class(name), "answers_task", task) == task)
