"""``claire watch``: check a live wiki's new edits as they happen (or a recording of them), with a
live line that fits the terminal and, at the end, what was read, set aside, checked and flagged."""

import signal
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.live import Live
from rich.text import Text

from claire.errors import ExitCode, redact
from claire.cli.terminal import counted
from claire.cli.options import PATROL_OPTIONS, ConcurrencyOpt, Settings, SystemOpt, console, err, run, with_settings

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


def print_summary(stats: Any, flagged: list[dict[str, Any]]) -> None:
    """What the patrol did, once, and each fact it flagged with the edit's diff on a line of its own."""
    aside = ", ".join(f"{n:,} {what}" for n, what in ((stats.left_aside, "left aside by the filter"),
                                                      (stats.repeated, "repeated"), (stats.bad, "unreadable")) if n)
    console.print(f"{counted(stats.seen, 'event')} read: {counted(stats.kept, 'new edit')} kept" + (f", {aside}" if aside else "") + ".")
    others = ", ".join(f"{n:,} {what}" for n, what in ((stats.skipped, "with nothing to check"), (stats.failed, "failed"),
                                                       (stats.requeued, "put back to be tried again")) if n)
    console.print(f"{counted(stats.checked, 'edit')} checked" + (f" ({others})" if others else "")
                  + f"; {counted(stats.facts, 'fact')} checked, {stats.flagged:,} flagged" + (":" if flagged else "."))
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


@with_settings(*PATROL_OPTIONS, "index", "languages", "language", "preset", "model", "base_url", "no_cache", "config_file", "sets")
def watch_command(
    max_events: Annotated[Optional[int], typer.Option("--max-events", min=1, help="Stop after reading this many events.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="First queue once more the edits that failed after watch.retry_tries tries.")] = False,
    from_start: Annotated[bool, typer.Option("--from-start", help="Read the stream or recording from its beginning, not from where the last run stopped (edits already checked are not checked again).")] = False,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Where results are kept (the web app's store; default: web/ in the user data folder).")] = None,
    concurrency: ConcurrencyOpt = None,
    system: SystemOpt = None,
    *,
    settings: Settings,
) -> None:
    """Check new edits of a live wiki as they happen; flagged facts wait in the web app's Patrol view."""
    from claire.jobs.store import default_store_path
    from claire.livewiki.patrol import patrol_source, run_patrol

    config = settings.batch(system, concurrency)
    source, _ = patrol_source(config)  # no stream or no such recording: said before anything is loaded
    store_path = default_store_path(data_dir)
    resumed_from = saved_position(store_path, source, forget=from_start)
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
    if stats.seen == 0 and resumed_from is not None and config.watch.replay:
        console.print("The recording was read to its end by an earlier run (this store keeps where it stopped); "
                      "give --from-start to read it again.", highlight=False, soft_wrap=True)
    raise typer.Exit(watch_exit_code(stats))


def saved_position(store_path: Path, source: Any, *, forget: bool) -> str | None:
    """Where the last patrol of ``source`` on this store stopped (None: nowhere yet); ``forget``
    drops it, so the stream or recording is read from its beginning."""
    from claire.jobs.store import JobStore

    if not store_path.exists():
        return None
    store = JobStore(store_path)
    try:
        keys = [key for key in (source.key, source.older_key) if key]
        found = next((store.position(key) for key in keys if store.position(key) is not None), None)
        if forget:
            for key in keys:
                store.set_position(key, None)
            return None
        return found
    finally:
        store.close()


def watch_exit_code(stats: Any) -> int:
    """The documented exit status of a patrol: 1 when it flagged a fact, 2 when every edit it tried
    failed (nothing was checked), else 0."""
    if stats.flagged:
        return ExitCode.FLAGGED
    if stats.failed and not stats.checked and not stats.skipped:
        return ExitCode.ERROR
    return ExitCode.OK
