"""The terminal filter (no escape sequence from data reaches a terminal) and the search endpoint's
limits."""

from __future__ import annotations




from rich.text import Text
from claire.cli.terminal import terminal_console

from claire.indexes.http_search import answer


# -- the terminal filter and the search endpoint ---------------------------------------------

def test_the_word_after_an_osc_whose_bel_rich_dropped_stays_visible():
    console = terminal_console(record=True, force_terminal=True, width=100)
    console.print(Text("…released \x1b]0;PWNED\x07the Compaq"))
    console.print("…released \x1b]0;PWNED\x07the Compaq")
    shown = console.export_text()
    assert shown.count("the Compaq") == 2 and "\x1b]" not in shown and "\x07" not in shown


def test_a_lone_surrogate_in_exclude_title_is_a_422():
    status, payload = answer(None, {"query": "tower", "exclude_title": "Caf\udce9"}, index="demo")  # type: ignore[arg-type]
    assert status == 422 and payload["detail"].startswith("exclude_title") and "surrogate" in payload["detail"]
    status, payload = answer(None, {"query": "tow\ud800er"}, index="demo")  # type: ignore[arg-type]
    assert status == 422 and payload["detail"].startswith("query")


def test_the_watch_line_says_how_many_edits_wait_to_be_tried_again():
    from claire.cli.watch import watch_line
    from claire.livewiki.patrol import PatrolStats

    stats = PatrolStats(seen=5, kept=3, requeued=2, checked=1)
    assert watch_line(stats, 200) == "events 5 · kept 3 · checked 1 · flagged 0 · retrying 2"
    assert "retrying" not in watch_line(PatrolStats(seen=1), 200)
