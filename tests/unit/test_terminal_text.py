"""Text from passages, titles and models never drives the terminal: control sequences are dropped
before anything is printed."""

from __future__ import annotations

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from claire.cli.terminal import printable, terminal_console


def test_terminal_control_sequences_never_reach_the_terminal():
    hostile = "before \x1b]52;c;SGVsbG8=\x07 \x1b[2J\x1b[31mred\x1b[0m \x9b1m \x07bell after"
    assert printable(hostile) == "before  red  bell after"
    assert printable("tabs\tand\nnewlines stay") == "tabs\tand\nnewlines stay"
    console = terminal_console(record=True, force_terminal=True, width=100)
    table = Table()
    table.add_column("passage")
    table.add_row(Text(hostile))
    console.print(table)
    console.print(Panel(hostile, title="evidence"), style="bold")
    written = console.export_text(styles=True)
    assert "]52;" not in written and "[2J" not in written and "\x07" not in written
    assert "\x1b[1m" in written  # the console's own styles still go out
    # Rich drops the BEL that ends an OSC before the filter sees it: the words after stay visible
    console = terminal_console(record=True, force_terminal=True, width=100)
    console.print("The \x1b]52;c;SGVsbG8=\x07 tower is tall \x1b[31mred")
    shown = console.export_text()
    assert "tower is tall" in shown and "red" in shown and "]52" not in shown
