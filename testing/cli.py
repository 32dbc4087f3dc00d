"""The ``claire`` command as a test runs it, with an environment of its own — none of the
``CLAIRE_*`` or ``OPENAI_*`` variables of the shell that started the tests, the cache and data
folders in the test's folder, no model hub, no colours and a fixed terminal width.

:func:`run_claire` runs a command to its end. By default it runs in the test's own process, through
the console script's own entry point (:func:`claire.cli.app.main`) inside Click's
``CliRunner.isolation`` — the same arguments, environment, input, output and exit status as the
installed command, without paying Python's and the models' start-up again for every call; an
exception that escapes becomes exit status 1 and its traceback on stderr, as it would in a process.
``process=True`` runs it in a real process (``python -m claire.cli``) instead: for what only a process
shows (start-up, signals, the installed entry point). :func:`start_claire` starts a process a test
stops or reads while it runs; :func:`claire_command` and :func:`claire_environment` are their parts,
for a test that needs a process of another kind (on a pseudo-terminal, say).
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
import warnings
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
               stdin: str | None = None, columns: int = 120, process: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``claire ARGS`` to its end in :func:`claire_environment`; its exit code, stdout and
    stderr as text. ``stdin`` is typed into it; without it the command reads an empty input.
    In this process unless ``process`` (then ``timeout`` bounds the process)."""
    environment = claire_environment(cache, env, columns=columns)
    if process:
        return subprocess.run(claire_command(*args), capture_output=True, text=True, timeout=timeout, env=environment,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
    return run_in_this_process(args, environment, stdin=stdin)


def run_in_this_process(args: tuple[str, ...] | list[str], environment: Mapping[str, str], *,
                        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``claire ARGS`` through :func:`claire.cli.app.main` in this process, with exactly
    ``environment`` as its environment (what is not in it is removed for the call), ``stdin`` as its
    input, and its stdout, stderr and exit status captured; everything is put back afterwards."""
    from click.testing import CliRunner

    from claire.cli.app import main
    from claire.cli.options import console, err

    changes: dict[str, str | None] = {name: value for name, value in environment.items() if os.environ.get(name) != value}
    # the command's consoles were made when this process first imported them: give them this call's width
    widths = (console.width, err.width)
    columns = environment.get("COLUMNS", "")
    if columns.isdigit():
        console.width = err.width = int(columns)
    changes.update({name: None for name in os.environ if name not in environment})
    saved_argv, saved_showwarning = sys.argv, warnings.showwarning
    status = 0
    with CliRunner().isolation(input=stdin or "", env=changes) as (stdout, stderr, _):
        sys.argv = ["claire", *args]
        try:
            main()
        except SystemExit as exit:
            if isinstance(exit.code, str):
                sys.stderr.write(exit.code + "\n")
                status = 1
            else:
                status = exit.code or 0
        except BaseException:  # what a process would die of: its traceback, status 1
            sys.stderr.write(traceback.format_exc())
            status = 1
        finally:
            sys.argv, warnings.showwarning = saved_argv, saved_showwarning
            console.width, err.width = widths
            sys.stdout.flush()
            sys.stderr.flush()
        out, error = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(["claire", *args], status, out.decode("utf-8", "replace"),
                                       error.decode("utf-8", "replace"))


def start_claire(*args: str, cache: Path | str, env: Mapping[str, str] | None = None, columns: int = 120,
                 **options: Any) -> subprocess.Popen:
    """Start ``claire ARGS`` in :func:`claire_environment` and return at once. Its stdout and
    stderr are pipes of text and its input is empty unless ``options`` (``subprocess.Popen``'s)
    say otherwise."""
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "stdin": subprocess.DEVNULL, "text": True, **options}
    return subprocess.Popen(claire_command(*args), env=claire_environment(cache, env, columns=columns), **options)
