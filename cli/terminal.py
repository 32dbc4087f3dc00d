"""What may reach the terminal: the consoles every command prints through, which drop terminal
control sequences (ESC/CSI/OSC, other control characters) from the text they show, and the
status line a command keeps up to date while it works.

Corpus passages, model answers and dataset fields are printed as they are; a passage holding
``ESC ]52;...`` or ``ESC [2J`` must not be able to set the clipboard or clear the screen. The filter
works on the text of each rendered segment, so Rich's own colours (kept apart as styles) survive.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, ConsoleOptions, RenderHook, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.spinner import Spinner

# OSC ... (BEL | ESC \), CSI ... final byte, any other two-character ESC sequence, and the C0/C1
# control characters other than tab and newline. An OSC whose end is gone — Rich's Text drops the
# BEL before the filter sees it — loses only its introducer and number: where its payload ended
# cannot be known, and the visible words that follow must not be swallowed with it (the payload
# may show as text; nothing reaches the terminal as a command).
_CONTROL = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b\][0-9]*;?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[@-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def printable(text: str) -> str:
    """``text`` without terminal control sequences or control characters (tabs and newlines stay)."""
    return _CONTROL.sub("", text)


class _Printable:
    """A renderable shown with the control sequences taken out of its text."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control:
                yield segment  # Rich's own cursor moves (progress bars, live views)
            else:
                yield Segment(printable(segment.text), segment.style)


class _PrintableOnly(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Printable(renderable) for renderable in renderables]


class _TerminalConsole(Console):
    """A console whose strings lose their control sequences before Rich reads them: Rich would
    drop a lone BEL or ESC itself and show the rest of a sequence as text."""

    def render_str(self, text: str, **kwargs: Any) -> Any:
        """The string made printable, then rendered as Rich does."""
        return super().render_str(printable(text), **kwargs)


def counted(n: int, what: str, plural: str | None = None) -> str:
    """``n`` things in words: "1 flagged fact", "2 flagged facts", "1 LLM call"."""
    return f"{n:,} {what if n == 1 else (plural or what + 's')}"


def terminal_console(**kwargs: Any) -> Console:
    """A Rich console that never writes a control sequence it did not make itself, nor turns a
    ``:word:`` of the text (a system named ``module:X``, a time) into an emoji."""
    kwargs.setdefault("emoji", False)
    console = _TerminalConsole(**kwargs)
    console.push_render_hook(_PrintableOnly())
    return console


class StatusLine:
    """A spinner and what the command is doing, on one line, drawn the moment it starts (not at
    the first tick) and gone when it stops; nothing at all where the console is not a terminal."""

    def __init__(self, console: Console, text: str):
        self.spinner = Spinner("dots", text=text)
        self.live = Live(self.spinner, console=console, transient=True, refresh_per_second=12.5)

    def update(self, text: str) -> None:
        """Say what the command is doing now."""
        self.spinner.update(text=text)

    def start(self) -> None:
        """Show the line (again, after :meth:`stop`)."""
        self.live.start(refresh=True)

    def stop(self) -> None:
        """Take the line away, e.g. while the person is asked something."""
        self.live.stop()

    def __enter__(self) -> "StatusLine":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
