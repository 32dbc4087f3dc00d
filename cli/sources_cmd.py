"""``claire sources``: how reliable a source is and what a cited page says.

- ``claire sources rate URL|NAME`` — its tier on English Wikipedia's Perennial sources list (the
  shipped snapshot, or ``resolve.reliability``);
- ``claire sources read URL`` — a cited page as the resolver reads it (sources file, cache, or a
  guarded fetch), with why it could not be read;
- ``claire sources refresh`` — a new snapshot from the live list through the MediaWiki Action API,
  or from a saved copy of its wikitext (``--from-file``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from claire.cli.options import JsonOpt, Settings, console, err, run, with_settings
from claire.errors import ClaireError, ConfigError, ExitCode


@with_settings("config_file", "sets")
def sources_rate(
    source: Annotated[str, typer.Argument(help="A URL, or a publisher's or website's name.")],
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """The source's tier on the Perennial sources list (generally reliable ... not listed)."""
    from claire.sources.reliability import Perennial

    if not source.strip():
        raise ConfigError("give a URL or a source's name")
    config = settings.resolve()
    perennial = Perennial.load(config.resolve.reliability)
    is_url = "://" in source or ("." in source and " " not in source.strip())
    url = source if "://" in source else (f"https://{source.strip()}" if is_url else None)
    rating = perennial.rate(url=url, site="" if is_url else source)
    if as_json:
        row = rating.source
        print(json.dumps({"tier": rating.tier, "matched": rating.matched, "name": row.name if row else None,
                          "domains": list(row.domains) if row else [], "last_discussed": row.last_discussed if row else None,
                          "other_rows": [{"name": o.name, "tier": o.tier} for o in rating.others]},
                         indent=2, ensure_ascii=False))
        return
    console.print(Text.assemble((rating.tier, "bold"), f"  ({rating.label()})" if rating.source else "",
                                f"  matched {rating.matched}" if rating.matched else ""))


@with_settings("config_file", "sets")
def sources_read(
    url: Annotated[str, typer.Argument(help="The cited page's URL.")],
    sources: Annotated[Optional[Path], typer.Option("--sources", help="Read pages from this JSONL file first (url, title, text).")] = None,
    allow_private: Annotated[bool, typer.Option("--allow-private", help="Fetch from private and loopback addresses too.")] = False,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """A cited page's main text, title, site and date as the resolver reads it. Exit 0 read, 2 not readable."""
    from claire.sources.reading import SourceReader

    config = settings.resolve(**{"resolve.sources": sources, "resolve.allow_private": True if allow_private else None})
    reader = SourceReader(config.resolve)
    with err.status("reading the page…"):
        page = run(reader.read(url))
    if as_json:
        print(page.model_dump_json(indent=2))
    elif page.readable:
        console.print(Text.assemble((page.title or page.url, "bold"), f" — {page.site}" if page.site else "",
                                    f" ({page.date})" if page.date else "", (f"  [{page.origin}]", "dim")))
        console.print(page.text, markup=False, highlight=False)
    if not page.readable:
        err.print(Text.assemble(("error: ", "red"), page.error or "could not read the page"))
        raise typer.Exit(ExitCode.ERROR)


@with_settings("config_file", "sets")
def sources_refresh(
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write the snapshot (default: perennial_sources.json in the data directory; point resolve.reliability at it).")] = None,
    from_file: Annotated[Optional[Path], typer.Option("--from-file", help="Parse this saved wikitext of the list instead of fetching it.")] = None,
    api_url: Annotated[str, typer.Option("--api-url", help="The MediaWiki Action API to read the list from.")] = "https://en.wikipedia.org/w/api.php",
    user_agent: Annotated[Optional[str], typer.Option("--user-agent", help="The User-Agent sent to Wikimedia (add your contact, as its policy asks).")] = None,
    *,
    settings: Settings,
) -> None:
    """Write a new Perennial sources snapshot (name, domains, status, last-discussed year) from the live list."""
    from claire.settings import data_dir
    from claire.files import write_atomically
    from claire.sources.reliability import Perennial, changes, snapshot_from

    config = settings.resolve()
    target = out or data_dir() / "perennial_sources.json"
    if from_file is not None:
        try:
            wikitext = from_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read {from_file}: {error}") from None
    else:
        with err.status("reading the Perennial sources list from the wiki…"):
            wikitext = run(_live_list(api_url, user_agent or config.watch.user_agent))
    snapshot = snapshot_from(wikitext)
    try:
        before = Perennial.load(target if target.is_file() else config.resolve.reliability)
    except ClaireError:
        before = Perennial.load()
    changed = changes(before, snapshot)
    for what, names in changed.items():
        if names:
            shown = "; ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            console.print(f"{what} ({len(names)}): {shown}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, snapshot.to_json())
    except OSError as error:
        raise ConfigError(f"cannot write {target}: {error.strerror or error}") from None
    tiers: dict[str, int] = {}
    for row in snapshot.sources:
        tiers[row.tier] = tiers.get(row.tier, 0) + 1
    console.print(f"{len(snapshot.sources)} sources ({', '.join(f'{n} {t}' for t, n in tiers.items())}) written to {target}")
    console.print(Text(f"use it with: --set resolve.reliability={target}", style="dim"))


async def _live_list(api_url: str, user_agent: str | None) -> str:
    """The list's wikitext and its subpages', through the polite MediaWiki client (maxlag, retries,
    the configured User-Agent)."""
    from claire.livewiki.mediawiki import USER_AGENT, MediaWikiClient
    from claire.sources.reliability import PAGE, subpages

    client = MediaWikiClient(user_agent=user_agent or USER_AGENT, timeout=60.0)
    try:
        main = await client.page_wikitext(api_url, PAGE)
        return "\n".join([main] + [await client.page_wikitext(api_url, title) for title in subpages(main)])
    finally:
        await client.aclose()

