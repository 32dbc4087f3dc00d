"""The documentation tells the truth: every command README.md and the pages under docs/ show
names files that ship with the project (a file the reader brings is written ``path/to/…``, an
output goes under ``out/``), and the cheap ones — help, configuration, prompts, a sweep's plan —
run as written, in process."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```(?:bash|sh|console)\n(.*?)```", re.DOTALL)
_FILE = re.compile(r"^[\w.-]+(?:/[\w.@-]+)+\.(?:json|jsonl|txt|xml|yaml|yml|md|j2|html|toml|gz|bz2)(?::[\w-]+)?$")
# what a reader writes or brings, never a file of the project
_NOT_OURS = ("path/to/", "out/", "/", "~", "http", "dev.json", "test.json")
# cheap commands that run as written: no model, no index build, no server
_CHEAP = (("--help",), ("prompts", "list"), ("prompts", "show"), ("config", "show"))


def documented_commands() -> list[tuple[str, list[str]]]:
    """(page, argv) of every ``claire`` or ``python -m claire...`` command in a shell block."""
    found = []
    for page in PAGES:
        for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #", 1)[0].strip().rstrip("&").strip()
                if not line or line.startswith("#"):
                    continue
                try:
                    argv = shlex.split(line)
                except ValueError:
                    continue
                if argv[:1] == ["claire"] or argv[:3] == ["python", "-m", "claire.testing.oracle"]:
                    found.append((page.name, argv))
    return found


COMMANDS = documented_commands()


def test_the_pages_show_commands():
    assert len(COMMANDS) > 40 and {page for page, _ in COMMANDS} >= {"README.md", "check.md", "sweeps.md"}


@pytest.mark.parametrize(("page", "argv"), COMMANDS, ids=lambda value: " ".join(value)[:70] if isinstance(value, list) else value)
def test_every_file_a_documented_command_names_ships(page, argv):
    for token in argv[1:]:
        value = token.split("=", 1)[1] if token.startswith("--") and "=" in token else token
        if not _FILE.match(value) or value.startswith(_NOT_OURS):
            continue
        path = ROOT / value.rsplit(":", 1)[0] if value.count(":") == 1 else ROOT / value
        assert path.exists(), f"{page}: `{' '.join(argv)}` names {value}, which a fresh clone does not have"


CHEAP = [(page, argv) for page, argv in COMMANDS
         if argv[:1] == ["claire"] and any(tuple(argv[1:1 + len(cheap)]) == cheap for cheap in _CHEAP)
         and not any("path/to/" in a for a in argv)]
CHEAP += [(page, argv) for page, argv in COMMANDS if argv[:2] == ["claire", "sweep"] and "--dry-run" in argv]


def test_some_documented_commands_are_cheap_enough_to_run():
    assert len(CHEAP) >= 6


@pytest.mark.parametrize(("page", "argv"), CHEAP, ids=lambda value: " ".join(value)[:70] if isinstance(value, list) else value)
def test_a_cheap_documented_command_runs_as_written(page, argv, tmp_path, monkeypatch):
    from claire.cli.app import app

    monkeypatch.chdir(ROOT)
    for name in [n for n in __import__("os").environ if n.startswith(("CLAIRE_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CLAIRE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CLAIRE_CACHE_DIR", str(tmp_path))
    arguments = [str(tmp_path / a) if a.startswith("out/") else a for a in argv[1:]]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, f"{page}: `{' '.join(argv)}` exited {result.exit_code}: {result.output[-800:]}"
