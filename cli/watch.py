"""``claire watch``: check a live wiki's new edits as they happen (or a recording of them)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.live import Live
from rich.text import Text

from claire.errors import redact
from claire.cli.options import (
    BaseUrlOpt, ConcurrencyOpt, ConfigOpt, IndexOpt, ModelOpt, NoCacheOpt, PresetOpt, SetOpt, SystemOpt,
    console, err, eval_config, run,
)

StreamUrlOpt = Annotated[Optional[str], typer.Option("--stream-url", help="The recentchange event stream (watch.stream_url; default: Wikimedia's).")]
ReplayOpt = Annotated[Optional[Path], typer.Option("--replay", help="Read recorded events (JSONL, the stream's own shape) instead of the stream.")]
ApiUrlOpt = Annotated[Optional[str], typer.Option("--api-url", help="The MediaWiki Action API for every wiki (default: from each event).")]
WikiOpt = Annotated[Optional[list[str]], typer.Option("--wiki", help="A wiki to check, e.g. enwiki (repeatable; watch.wikis).")]
NamespaceOpt = Annotated[Optional[list[int]], typer.Option("--namespace", help="A namespace to check (repeatable; default 0, articles).")]
BotsOpt = Annotated[bool, typer.Option("--include-bots", help="Check bot edits too.")]
TitleOpt = Annotated[Optional[list[str]], typer.Option("--title", help="Only titles matching this regular expression (repeatable).")]
CategoryOpt = Annotated[Optional[list[str]], typer.Option("--category", help="Only pages in this category (repeatable).")]
EditsOpt = Annotated[Optional[int], typer.Option("--edits-in-flight", min=1, help="Edits checked at once (watch.edits_in_flight).")]


def watch_settings(stream_url: str | None, replay: Path | None, api_url: str | None, wiki: list[str] | None,
                   namespace: list[int] | None, include_bots: bool, title: list[str] | None, category: list[str] | None,
                   edits_in_flight: int | None) -> dict:
    """The ``watch.*`` settings the patrol flags stand for (None where a flag was not given)."""
    return {"watch.stream_url": stream_url, "watch.replay": str(replay) if replay else None, "watch.api_url": api_url,
            "watch.wikis": wiki or None, "watch.namespaces": namespace or None,
            "watch.include_bots": True if include_bots else None, "watch.titles": title or None,
            "watch.categories": category or None, "watch.edits_in_flight": edits_in_flight}


def watch_command(
    stream_url: StreamUrlOpt = None,
    replay: ReplayOpt = None,
    api_url: ApiUrlOpt = None,
    wiki: WikiOpt = None,
    namespace: NamespaceOpt = None,
    include_bots: BotsOpt = False,
    title: TitleOpt = None,
    category: CategoryOpt = None,
    edits_in_flight: EditsOpt = None,
    max_events: Annotated[Optional[int], typer.Option("--max-events", min=1, help="Stop after reading this many events.")] = None,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Where results are kept (the web app's store; default: web/ in the user data folder).")] = None,
    concurrency: ConcurrencyOpt = None,
    system: SystemOpt = None,
    index: IndexOpt = None,
    preset: PresetOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    no_cache: NoCacheOpt = False,
    config_file: ConfigOpt = None,
    sets: SetOpt = None,
) -> None:
    """Check new edits of a live wiki as they happen; flagged facts wait in the web app's Patrol view."""
    from claire.workflows.job_store import default_store_path
    from claire.workflows.patrol import run_patrol

    config = eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency, preset,
                         **watch_settings(stream_url, replay, api_url, wiki, namespace, include_bots, title, category,
                                          edits_in_flight))
    store_path = default_store_path(data_dir)
    source = f"the recording {config.watch.replay}" if config.watch.replay else redact(config.watch.stream_url or "")
    err.print(f"watching {source} for edits of {', '.join(config.watch.wikis) or 'every wiki'} "
              f"(namespaces {', '.join(map(str, config.watch.namespaces)) or 'all'}); results in {store_path}")
    with Live(Text("starting…"), console=err, transient=False, refresh_per_second=2) as live:
        # facts checked at once: enough for every edit in flight to have one being checked
        concurrency = max(config.eval.concurrency, config.watch.edits_in_flight)
        stats = run(run_patrol(config, store_path=store_path, concurrency=concurrency, max_events=max_events,
                               on_progress=lambda s: live.update(Text(s.line())),
                               stop_on=(signal.SIGINT, signal.SIGTERM)))
    console.print(stats.line())
