"""Every task by name, looked up in one place: ``wikicollide`` (the default), ``feverous``,
``citations`` and ``sides``.

The names are listed here once (the configuration reads them at startup without loading any
task); a task is loaded on first use by :func:`get_task`.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from claire.settings import register_name_check
from claire.errors import ConfigError

TASKS: dict[str, str] = {
    "wikicollide": "claire.tasks.wikicollide:WikiCollide",
    "feverous": "claire.tasks.feverous:Feverous",
    "citations": "claire.tasks.citations:Citations",
    "sides": "claire.tasks.sides:Sides",
}
"""Each task's name and the class that is it (``module:Class``)."""

TASK_NAMES: tuple[str, ...] = tuple(TASKS)


def _check_task_setting(value: str) -> str:
    """``agent.task`` names a task."""
    if value not in TASKS:
        raise ValueError(f"unknown task {value!r}; allowed: {', '.join(TASKS)}")
    return value


register_name_check("agent.task", _check_task_setting)


@cache
def _load(name: str) -> Any:
    module, _, cls = TASKS[name].partition(":")
    return getattr(import_module(module), cls)()


def get_task(name: str | None) -> Any:
    """The task called ``name`` (None: wikicollide), a :class:`~claire.tasks.base.Task`; a clear error
    naming the choices otherwise."""
    name = name or "wikicollide"
    if name not in TASKS:
        raise ConfigError(f"unknown task '{name}'; allowed: {', '.join(TASKS)}")
    return _load(name)
