"""Every task by name, looked up in one place: ``wikicollide`` (the default), ``feverous`` and
``citations``."""

from __future__ import annotations

from claire.errors import ConfigError
from claire.tasks.base import Task
from claire.tasks.citations import Citations
from claire.tasks.feverous import Feverous
from claire.tasks.wikicollide import WikiCollide

TASKS: dict[str, Task] = {task.name: task for task in (WikiCollide(), Feverous(), Citations())}
"""The tasks, by name."""


def get_task(name: str | None) -> Task:
    """The task called ``name`` (None: wikicollide); a clear error naming the choices otherwise."""
    task = TASKS.get(name or "wikicollide")
    if task is None:
        raise ConfigError(f"unknown task '{name}'; allowed: {', '.join(TASKS)}")
    return task
