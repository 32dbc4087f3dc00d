"""The ``claire`` command in a subprocess, as a test runs it: the same Python, ``python -m
claire.cli``, and an environment of its own — none of the ``CLAIRE_*`` or ``OPENAI_*`` variables of
the shell that started the tests, the cache and data folders in the test's folder, no model hub,
no colours and a fixed terminal width.

:func:`run_claire` runs a command to its end; :func:`start_claire` starts one a test stops or
reads while it runs; :func:`claire_command` and :func:`claire_environment` are their parts, for a
test that needs a process of another kind (on a pseudo-terminal, say).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LEFT_OUT = ("CLAIRE_", "OPENAI_")  # the shell's own settings and keys never reach a test's command


def claire_command(*args: str) -> list[str]:
    """The argument list that runs ``claire ARGS`` with this interpreter."""
    return [sys.executable, "-m", "claire.cli", *args]


def claire_environment(cache: Path | str, env: Mapping[str, str] | None = None, *, columns: int = 120) -> dict[str, str]:
    """This process's environment without ``CLAIRE_*``/``OPENAI_*``, with ``CLAIRE_CACHE_DIR`` and
    ``CLAIRE_DATA_DIR`` both at ``cache``, offline model loading, ``NO_COLOR`` and ``COLUMNS``;
    then ``env`` on top (an API key, a data folder of its own, another setting)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith(LEFT_OUT)}
    environment.update({"CLAIRE_CACHE_DIR": str(cache), "CLAIRE_DATA_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                        "TRANSFORMERS_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": str(columns)})
    environment.update(env or {})
    return environment


def run_claire(*args: str, cache: Path | str, env: Mapping[str, str] | None = None, timeout: float = 300,
               stdin: str | None = None, columns: int = 120) -> subprocess.CompletedProcess[str]:
    """Run ``claire ARGS`` to its end in :func:`claire_environment`; its exit code, stdout and
    stderr as text. ``stdin`` is typed into it; without it the command reads an empty input."""
    return subprocess.run(claire_command(*args), capture_output=True, text=True, timeout=timeout,
                          env=claire_environment(cache, env, columns=columns),
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def start_claire(*args: str, cache: Path | str, env: Mapping[str, str] | None = None, columns: int = 120,
                 **options: Any) -> subprocess.Popen:
    """Start ``claire ARGS`` in :func:`claire_environment` and return at once. Its stdout and
    stderr are pipes of text and its input is empty unless ``options`` (``subprocess.Popen``'s)
    say otherwise."""
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "stdin": subprocess.DEVNULL, "text": True, **options}
    return subprocess.Popen(claire_command(*args), env=claire_environment(cache, env, columns=columns), **options)
