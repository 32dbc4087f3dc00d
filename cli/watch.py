"""``claire watch``: check a live wiki's new edits as they happen (or a recording of them), with a
live line that fits the terminal and, at the end, what was read, set aside, checked and flagged."""

import signal
from pathlib import Path
from typing import Annotated, Any, Optional

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


def watch_line(stats: Any, width: int) -> str:
    """The live line of a patrol's counts, cut to ``width``: the events read and what became of
    them (kept, or left aside by the filter, repeated, unreadable), then the edits checked and the
    facts flagged, then the lag behind the stream."""
    aside = [(stats.left_aside, "left aside"), (stats.repeated, "repeated"), (stats.bad, "unreadable")]
    parts = [f"events {stats.seen:,}", f"kept {stats.kept:,}", *(f"{what} {n:,}" for n, what in aside if n),
             f"checked {stats.checked:,}", f"flagged {stats.flagged:,}"]
    parts += [f"{what} {n:,}" for n, what in ((stats.requeued, "retrying"), (stats.skipped, "nothing to check"),
                                               (stats.failed, "failed")) if n]
    if stats.lag_s is not None:
        parts.append(f"lag {stats.lag_s:,.0f} s")
    line = " · ".join(parts)
    while len(line) > width and len(parts) > 2:  # the last parts go first
        parts.pop()
        line = " · ".join(parts) + " …"
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def print_summary(stats: Any, flagged: list[dict[str, Any]]) -> None:
    """What the patrol did, once, and each fact it flagged with the edit's diff on a line of its own."""
    aside = ", ".join(f"{n:,} {what}" for n, what in ((stats.left_aside, "left aside by the filter"),
                                                      (stats.repeated, "repeated"), (stats.bad, "unreadable")) if n)
    console.print(f"{_count(stats.seen, 'event')} read: {_count(stats.kept, 'new edit')} kept" + (f", {aside}" if aside else "") + ".")
    others = ", ".join(f"{n:,} {what}" for n, what in ((stats.skipped, "with nothing to check"), (stats.failed, "failed"),
                                                       (stats.requeued, "put back to be tried again")) if n)
    console.print(f"{_count(stats.checked, 'edit')} checked" + (f" ({others})" if others else "")
                  + f"; {_count(stats.facts, 'fact')} checked, {stats.flagged:,} flagged" + (":" if flagged else "."))
    for item in flagged:
        score = "" if item["score"] is None else f" · score {item['score']:.2f}"
        console.print(Text.assemble("  ", (str(item["title"]), "bold"), f" · revision {item['revision']}{score}"))
        console.print(Text("    " + item["fact"]))
        if item.get("diff_url"):
            console.print(Text("    " + item["diff_url"], style=f"link {item['diff_url']}"), soft_wrap=True)


def flagged_in(store_path: Path, edits: list[str]) -> list[dict[str, Any]]:
    """The flagged facts of ``edits`` (the job ids of the edits this run checked), newest edit first."""
    from claire.jobs.store import JobStore

    if not edits:
        return []
    wanted = set(edits)
    store = JobStore(store_path)
    try:
        rows = [row for row in store.patrol_items(flagged_only=True, limit=2000) if row["job_id"] in wanted]
    finally:
        store.close()
    return [{"title": row["request"].get("title"), "revision": row["request"].get("revision"), "score": row["score"],
             "fact": row["fact"], "diff_url": row["request"].get("diff_url")} for row in rows]


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
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="First queue once more the edits that failed after watch.retry_tries tries.")] = False,
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
    from claire.jobs.store import default_store_path
    from claire.livewiki.patrol import patrol_source, run_patrol

    config = eval_config(config_file, sets, model, base_url, no_cache, False, index, system, concurrency, preset,
                         **watch_settings(stream_url, replay, api_url, wiki, namespace, include_bots, title, category,
                                          edits_in_flight))
    patrol_source(config)  # no stream or no such recording: said before anything is loaded
    store_path = default_store_path(data_dir)
    source = f"the recording {config.watch.replay}" if config.watch.replay else redact(config.watch.stream_url or "")
    err.print(f"watching {source} for edits of {', '.join(config.watch.wikis) or 'every wiki'} "
              f"(namespaces {', '.join(map(str, config.watch.namespaces)) or 'all'}); results in {store_path}")
    # facts checked at once: enough for every edit in flight to have one being checked
    concurrency = max(config.eval.concurrency, config.watch.edits_in_flight)
    with Live(Text("starting…"), console=err, transient=True, refresh_per_second=2) as live:
        stats = run(run_patrol(config, store_path=store_path, concurrency=concurrency, max_events=max_events,
                               on_progress=lambda s: live.update(Text(watch_line(s, err.width), no_wrap=True)),
                               stop_on=(signal.SIGINT, signal.SIGTERM), retry_failed=retry_failed))
    print_summary(stats, flagged_in(store_path, stats.flagged_edits))
