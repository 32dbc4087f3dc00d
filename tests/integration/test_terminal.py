"""The ``claire`` command on a real pseudo-terminal, 80 columns wide, as a person runs it: a status
line from the start, the evidence and the verifier's case before the review question, the
decision in the result, and `claire watch`'s live line and summary. Against the local
OpenAI-compatible server and the real demo index."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time

import pytest

from claire.testing.cli import claire_command, claire_environment
from claire.testing.doubles import http_responder
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.wiki_doubles import WikiApiServer, change_event

_ESCAPE = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
WIDTH = 80


def plain(text: str) -> str:
    """What the terminal shows, line by line: a small screen that follows line feeds, carriage
    returns, erased lines and moves up (a status line redrawn in place is not left as text),
    without colours and links. Lines longer than the screen are kept whole (to be measured)."""
    lines: list[str] = [""]
    row = col = 0
    position = 0
    for match in list(_ESCAPE.finditer(text)) + [None]:
        chunk = text[position:match.start() if match else len(text)]
        for char in chunk:
            if char == "\n":
                row += 1
                col = 0
                if row == len(lines):
                    lines.append("")
            elif char == "\r":
                col = 0
            elif char >= " " or char == "\t":
                line = lines[row].ljust(col)
                lines[row] = line[:col] + char + line[col + 1:]
                col += 1
        if match is None:
            break
        position = match.end()
        argument, final = match.group(1), match.group(2)
        if final == "K":  # erase in line
            lines[row] = "" if argument == "2" else lines[row][:col]
        elif final == "A":  # cursor up
            row = max(row - int(argument or 1), 0)
        elif final == "G":  # cursor to column
            col = int(argument or 1) - 1
    return "\n".join(line.rstrip() for line in lines)


class Terminal:
    """A command running on a pseudo-terminal of ``WIDTH`` columns: read what it shows, type into it."""

    def __init__(self, args: list[str], env: dict[str, str]):
        leader, follower = pty.openpty()
        os.set_blocking(leader, False)
        environment = {**env, "COLUMNS": str(WIDTH), "LINES": "40", "TERM": "xterm-256color"}
        environment.pop("NO_COLOR", None)
        self.started = time.monotonic()
        self.process = subprocess.Popen(claire_command(*args), stdin=follower, stdout=follower, stderr=follower,
                                        env=environment, start_new_session=True)
        os.close(follower)
        self.leader = leader
        self.output = ""
        self.first_output: float | None = None

    def read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.leader], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.leader, 65536)
        except OSError:  # the command ended and closed the terminal
            return False
        if not data:
            return False
        if self.first_output is None:
            self.first_output = time.monotonic() - self.started
        self.output += data.decode("utf-8", "replace")
        return True

    def expect(self, text: str, timeout: float = 180) -> str:
        """Wait until ``text`` is shown; everything shown so far (plain)."""
        deadline = time.monotonic() + timeout
        while text not in plain(self.output):
            if time.monotonic() > deadline or (self.process.poll() is not None and not self.read(0.5)):
                raise AssertionError(f"{text!r} never appeared; the terminal shows:\n{plain(self.output)[-3000:]}")
            self.read(0.5)
        return plain(self.output)

    def type(self, text: str) -> None:
        os.write(self.leader, text.encode())

    def finish(self, timeout: float = 180) -> int:
        """Read to the end; the exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.read(0.2)
        while self.read(0.2):
            pass
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise AssertionError(f"still running; the terminal shows:\n{plain(self.output)[-3000:]}")
        os.close(self.leader)
        return self.process.returncode


@pytest.fixture(scope="module")
def home(tmp_path_factory, copy_demo_index):
    folder = tmp_path_factory.mktemp("terminal-home")
    copy_demo_index(folder / "indexes")
    return folder


def environment(home) -> dict[str, str]:
    """The tests' environment for `claire` as a person's terminal has it: colours allowed, WIDTH columns."""
    env = claire_environment(home, {"OPENAI_API_KEY": "sk-terminal-0123456789", "TERM": "xterm-256color"}, columns=WIDTH)
    del env["NO_COLOR"]
    return env


def test_a_check_shows_the_evidence_before_asking_and_the_rejection_in_its_result(home):
    with MockOpenAIServer(http_responder()) as llm:
        terminal = Terminal(["check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--base-url",
                             llm.base_url, "--no-cache", "--no-rerank"], environment(home))
        before = terminal.expect("Is it a contradiction?")
        # the status line came first, then what the review is about: the passages cited, with their
        # whole address on a line of its own, the verifier's case and what the agent reported
        raw = _ESCAPE.sub("", terminal.output)  # the status line is redrawn in place, then erased: it is in what was written
        assert raw.index("reading the configuration") < raw.index("loading the agent") < raw.index("checking with")
        assert "opening the index demo" in raw
        asked = before[before.index(" INCONSISTENT "):]
        assert "the passages it cites" in asked and "[1] Eiffel Tower" in asked
        assert re.search(r"^https://en\.wikipedia\.org/wiki/Eiffel_Tower\S*$", asked, re.MULTILINE), asked
        assert "the verifier's case" in asked and "[1] disagrees." in asked
        assert "the agent reported" in asked and "[1] gives a different year" in asked
        assert asked.index("the passages it cites") < asked.index("Is it a contradiction?")
        # the resume hint keeps its thread id whole, on a line of its own
        assert re.search(r"^  claire check --resume check-[0-9a-f]{8}$", before, re.MULTILINE), before
        terminal.type("n\n")
        terminal.expect("comment (optional")  # with a comment the research would go on (the feedback loop)
        terminal.type("\n")
        code = terminal.finish()
    shown = plain(terminal.output)
    result = shown[shown.index("CLAIRE verdict"):]
    assert code == 0, shown[-2000:]  # the reviewer's decision is the answer
    assert " CONSISTENT " in result and "INCONSISTENT" in result  # the new verdict, and what it was
    words = " ".join(result.replace("│", " ").split())  # the panel's text, its borders aside
    assert "Your review: not a contradiction; the verdict changes from INCONSISTENT to CONSISTENT" in words, result
    # the verdict's own line says at once that the review decided it
    assert "CONSISTENT by your review (the verifier's inconsistency score: 0.90, flagged above 0.5)" in words, result
    assert "exit code from 1 to 0" in words
    # each step is shown with what it observed (not cut to "→ In…"), and nothing runs past 80 columns
    assert re.search(r"^\s+→ \d+ passages: Eiffel Tower", shown, re.MULTILINE), shown
    lines = [line for line in shown.split("\n") if not line.startswith("https://")]
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)


def test_a_check_with_json_answers_on_stdout_and_keeps_the_decision(home):
    """--json in a terminal: the question and the case go to stderr, the JSON result carries the decision."""
    with MockOpenAIServer(http_responder()) as llm:
        leader, follower = pty.openpty()
        process = subprocess.Popen(claire_command("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris",
                                                  "--base-url", llm.base_url, "--no-cache", "--no-rerank", "--json"),
                                   stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=environment(home),
                                   start_new_session=True)
        os.close(follower)
        shown = ""
        deadline = time.monotonic() + 180
        while "Is it a contradiction?" not in plain(shown) and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                shown += os.read(leader, 65536).decode("utf-8", "replace")
        assert "[1] Eiffel Tower" in plain(shown)
        os.write(leader, b"c\n")
        os.write(leader, b"\n")
        out, _ = process.communicate(timeout=180)
        os.close(leader)
    data = json.loads(out)
    assert process.returncode == 1 and data["verdict"] == "inconsistent"
    assert data["details"]["review"] == {"decision": "accept", "comment": None, "system_verdict": "inconsistent",
                                         "verdict": "inconsistent"}
    assert [t["action_name"] for t in data["trace"]][-1] == "human_review"


def test_a_missing_api_key_and_a_bad_setting_are_reported_before_anything_loads(home):
    env = environment(home)
    del env["OPENAI_API_KEY"]
    terminal = Terminal(["check", "The Eiffel Tower was completed in 1890."], env)
    assert terminal.finish(timeout=60) == 2
    assert "no API key for the LLM endpoint: set OPENAI_API_KEY" in plain(terminal.output)
    assert "loading the agent" not in plain(terminal.output)
    terminal = Terminal(["check", "The Eiffel Tower was completed in 1890.", "--set", "llm.no_such_setting=1"],
                        environment(home))
    assert terminal.finish(timeout=60) == 2
    assert "no_such_setting" in plain(terminal.output) and "loading the agent" not in plain(terminal.output)


def test_watch_fits_its_line_reports_what_it_set_aside_and_lists_what_it_flagged(home, tmp_path):
    old = "'''Paris''' is the capital of France. The city is home to the Eiffel Tower on the Champ de Mars."
    new = old + " The Eiffel Tower was completed in 1890 and quickly became the symbol of the city."
    revisions = {501: (7, "Paris", old), 502: (7, "Paris", new)}
    events = [change_event("Paris", 501, 502, user="Visitor")]
    events += [change_event(f"Talk page {i}", 700 + i, 800 + i, namespace=1) for i in range(4)]  # outside namespace 0
    events += [change_event("Paris", 501, 502, user="Visitor"), change_event("Robot", 1, 2, bot=True)]  # again; a bot
    recording = tmp_path / "recentchange.jsonl"
    recording.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    with MockOpenAIServer(http_responder()) as llm, WikiApiServer(revisions) as api:
        terminal = Terminal(["watch", "--replay", str(recording), "--api-url", api.api_url, "--base-url", llm.base_url,
                             "--system", "rav", "--no-cache", "--data-dir", str(tmp_path / "web"),
                             "--set", "retrieval.rerank=false"], environment(home))
        code = terminal.finish(timeout=300)
    shown = plain(terminal.output)
    assert code == 1, shown[-2000:]  # a fact was flagged: exit 1, as for every command
    summary = shown[shown.index("7 events read"):]
    assert shown.count("events read") == 1  # the final status, once
    assert "7 events read: 1 new edit kept, 5 left aside by the filter, 1 repeated." in " ".join(summary.split())
    assert "1 edit checked; 2 facts checked, 1 flagged:" in summary
    assert "Paris · revision 502" in summary
    assert "The Eiffel Tower was completed in 1890." in summary
    assert "https://en.wikipedia.org/w/index.php?diff=502&oldid=501" in summary
    # the live line (redrawn in place, then taken away) fits, and says what was set aside
    live = [line for line in re.split(r"[\r\n]", _ESCAPE.sub("", terminal.output)) if line.startswith("events ")]
    assert live and max(len(line) for line in live) <= WIDTH and "left aside 5" in live[-1], live
    lines = [line for line in shown.split("\n") if not line.startswith(("https://", "watching", "patrol:"))]
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
