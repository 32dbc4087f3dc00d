"""How soon the ``claire`` command answers (``claire bench startup``).

Each figure is the median wall time of fresh processes, and its ratio to the floor every Typer and
Rich program pays — ``python -c "import typer, rich.console"`` — measured in the same run, so the
ratios hold on a slow or busy machine too:

- ``claire --help``, and an argument error (an option ``check`` does not have), run to their end;
- the first byte ``claire check FACT`` writes to a terminal: the command runs on a pseudo-terminal
  and is stopped as soon as anything appears (its LLM endpoint is a closed local port, never
  reached that soon);
- for information, a configuration error (``--set`` of a setting that does not exist) and a
  missing API key, run to their end.

Every program runs with its compiled modules cached (``PYTHONPYCACHEPREFIX``, written by one
warm-up round that is not measured), as an installed package runs.

Targets (issue 35): ``--help`` and the argument error at most 2x the floor, check's first output at
most 3x.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from claire.errors import ClaireError

FLOOR = [sys.executable, "-c", "import typer, rich.console"]
CLAIRE = [sys.executable, "-m", "claire.cli"]
FACT = "The Eiffel Tower was completed in 1890."


@dataclass
class Case:
    """One way of starting the command, what it measures and the ratio it should stay under."""

    name: str
    argv: list[str]
    first_output: bool = False  # time to the first byte on a terminal, not to the end
    target: float | None = None
    env: dict[str, str | None] | None = None  # changes to the environment (None removes a variable)
    code: int = 2  # the exit status it must end with (a fast crash is no fast start)


CASES = [
    Case("claire --help", [*CLAIRE, "--help"], target=2.0, code=0),
    Case("argument error (claire check --no-such-option)", [*CLAIRE, "check", FACT, "--no-such-option"], target=2.0),
    Case("first output of claire check, on a terminal", [*CLAIRE, "check", FACT, "--title", "Paris"], first_output=True,
         target=3.0),
    Case("configuration error (--set llm.no_such_setting=1)", [*CLAIRE, "check", FACT, "--set", "llm.no_such_setting=1"]),
    Case("missing API key", [*CLAIRE, "check", FACT], env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}),
]


def _environment(pycache: str, changes: dict[str, str | None] | None) -> dict[str, str]:
    """The caller's environment (its data folder, so the demo index is the one it has) without
    CLAIRE settings, with a key and a closed local port as the LLM endpoint (a check never reaches
    an LLM before its first output), and compiled modules kept in ``pycache`` for every program
    measured alike, as an installed package has them (a warm-up run writes them)."""
    keep = ("CLAIRE_DATA_DIR", "CLAIRE_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if (not k.startswith("CLAIRE_") or k in keep) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONPYCACHEPREFIX": pycache,"OPENAI_API_KEY": "sk-bench-startup", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"})
    for key, value in (changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def wall_time(argv: list[str], env: dict[str, str], cwd: str, code: int = 0) -> float:
    """Seconds from start to exit of one run, which must end with status ``code`` and no traceback."""
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                          cwd=cwd, timeout=300)
    took = time.perf_counter() - started
    if done.returncode != code or b"Traceback" in done.stderr:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise ClaireError(f"`{' '.join(argv[2:])}` ended with status {done.returncode} (expected {code}): {said[0][:200]}")
    return took


def first_output_time(argv: list[str], env: dict[str, str], cwd: str, timeout: float = 300) -> float:
    """Seconds from start to the first byte the command writes to its terminal (it is then stopped)."""
    leader, follower = pty.openpty()
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=cwd,
                               start_new_session=True)
    os.close(follower)
    try:
        ready, _, _ = select.select([leader], [], [], timeout)
        elapsed = time.perf_counter() - started
        if not ready:
            raise TimeoutError(f"no output within {timeout:g} s: {' '.join(argv)}")
        if os.read(leader, 4096).lstrip().startswith(b"Traceback"):  # a crash is no first output
            raise ClaireError(f"`{' '.join(argv[2:])}` crashed before its first output")
        return elapsed
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        os.close(leader)


def measure(runs: int = 7) -> dict[str, Any]:
    """The floor and every case: median seconds, and each case's ratio to the floor."""
    with tempfile.TemporaryDirectory(prefix="claire-startup-") as home:
        cwd, pycache = os.path.join(home, "work"), os.path.join(home, "pycache")  # no claire.toml of the caller's is read
        os.makedirs(cwd)
        base = _environment(pycache, None)
        floor: list[float] = []
        times: dict[str, list[float]] = {case.name: [] for case in CASES}
        for measured in [False] + [True] * runs:  # interleaved, so a busy moment weighs on every figure alike
            took = wall_time(FLOOR, base, cwd)
            if measured:
                floor.append(took)
            for case in CASES:
                env = _environment(pycache, case.env)
                if case.first_output:
                    took = first_output_time(case.argv, env, cwd)
                else:
                    took = wall_time(case.argv, env, cwd, case.code)
                if measured:
                    times[case.name].append(took)
    floor_s = statistics.median(floor)
    rows = []
    for case in CASES:
        median = statistics.median(times[case.name])
        rows.append({"name": case.name, "median_s": round(median, 3), "ratio": round(median / floor_s, 2),
                     "target": case.target, "met": None if case.target is None else median / floor_s <= case.target})
    return {"runs": runs, "floor_s": round(floor_s, 3), "floor": " ".join(['python', '-c', '"import typer, rich.console"']),
            "cases": rows}


def run_startup_bench(*, runs: int = 7, console: Console, as_json: bool = False) -> dict[str, Any]:
    """Measure and print the figures."""
    figures = measure(runs)
    if as_json:
        import json

        print(json.dumps(figures, indent=2))
        return figures
    table = Table(title=f"claire start-up: median of {runs} runs; floor = {figures['floor']} = {figures['floor_s']:.3f} s",
                  title_justify="left")
    table.add_column("what")
    table.add_column("median s", justify="right")
    table.add_column("x floor", justify="right")
    table.add_column("target", justify="right")
    for row in figures["cases"]:
        target = "" if row["target"] is None else f"≤ {row['target']:g} " + ("[green]met[/]" if row["met"] else "[red]missed[/]")
        table.add_row(row["name"], f"{row['median_s']:.3f}", f"{row['ratio']:.2f}", target)
    console.print(table)
    return figures
