"""The live edits of a wiki: Wikimedia EventStreams' ``recentchange`` stream, or a recording of it.

:func:`stream_changes` follows the server-sent-event stream (one JSON change per event) across
dropped connections, asking to go on after the last event it saw (``Last-Event-ID``, as the
EventStreams service expects), waiting as the server's ``retry`` field or a growing backoff says.
:func:`replay_changes` reads recorded events (JSON lines in the stream's own shape). Both yield
``(position, data)``: the position to save so a restart goes on after that event (the stream's
event id, or the recording's line number), and the event's JSON text. :func:`parse_change` reads
one event into a :class:`Change`; :class:`ChangeFilter` keeps what the patrol should check (by
default English Wikipedia's articles, edits and page creations, no bots).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from claire.errors import ClaireError, ConfigError, DatasetError, redact
from claire.files import read_jsonl

log = logging.getLogger(__name__)

DEFAULT_STREAM = "https://stream.wikimedia.org/v2/stream/recentchange"
MAX_BACKOFF = 60.0


@dataclass(frozen=True)
class Change:
    """One change event of the stream: an edit or a page creation (others are kept as their type)."""

    wiki: str
    title: str
    namespace: int
    type: str  # edit, new, log, categorize
    bot: bool
    old_revision: int | None
    new_revision: int | None
    server_url: str
    server_script_path: str
    timestamp: float | None = None  # seconds since the epoch, when the change was made
    user: str = ""
    comment: str = ""
    event_id: str | None = None  # the event's meta.id

    @property
    def api_url(self) -> str:
        """The wiki's MediaWiki Action API (its server URL, script path and ``/api.php``)."""
        return f"{self.server_url.rstrip('/')}{self.server_script_path or '/w'}/api.php"

    def diff_url(self) -> str:
        """The page showing the edit's difference (or the new page, for a creation)."""
        script = f"{self.server_url.rstrip('/')}{self.server_script_path or '/w'}/index.php"
        if self.old_revision:
            return f"{script}?diff={self.new_revision}&oldid={self.old_revision}"
        return f"{script}?oldid={self.new_revision}"


def parse_change(data: str) -> Change:
    """One event's JSON as a Change; a ValueError saying what is wrong when it is not one."""
    try:
        event = json.loads(data)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg})") from None
    if not isinstance(event, dict):
        raise ValueError("not a JSON object")
    missing = [key for key in ("wiki", "title", "namespace", "type", "server_url") if key not in event]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    revision, meta = event.get("revision") or {}, event.get("meta") or {}
    if not isinstance(revision, dict) or not isinstance(meta, dict):
        raise ValueError("revision and meta must be objects")
    try:
        namespace = int(event["namespace"])
        old = int(revision["old"]) if revision.get("old") else None
        new = int(revision["new"]) if revision.get("new") else None
        timestamp = float(event["timestamp"]) if event.get("timestamp") is not None else None
    except (TypeError, ValueError):
        raise ValueError("namespace, revision ids and timestamp must be numbers") from None
    return Change(
        wiki=str(event["wiki"]), title=str(event["title"]), namespace=namespace, type=str(event["type"]),
        bot=bool(event.get("bot")), old_revision=old, new_revision=new, server_url=str(event["server_url"]),
        server_script_path=str(event.get("server_script_path") or "/w"), timestamp=timestamp,
        user=str(event.get("user") or ""), comment=str(event.get("comment") or ""),
        event_id=str(meta.get("id") or "") or None,
    )


@dataclass
class ChangeFilter:
    """Which changes the patrol checks: the wikis and namespaces, edits and page creations, bots or
    not, and (optionally) titles matching one of ``titles`` (regular expressions). Categories are
    checked later, from the revision's page (see :mod:`.mediawiki`)."""

    wikis: list[str] = field(default_factory=lambda: ["enwiki"])
    namespaces: list[int] = field(default_factory=lambda: [0])
    include_bots: bool = False
    titles: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            self._titles = [re.compile(pattern) for pattern in self.titles]
        except re.error as error:
            raise ConfigError(f"watch title filter {error.pattern!r} is not a regular expression: {error}") from None

    def why_not(self, change: Change) -> str | None:
        """Why a change is left aside (None: it is kept)."""
        if change.type not in ("edit", "new"):
            return f"a {change.type} event"
        if change.new_revision is None:
            return "no new revision"
        if self.wikis and change.wiki not in self.wikis:
            return f"another wiki ({change.wiki})"
        if self.namespaces and change.namespace not in self.namespaces:
            return f"namespace {change.namespace}"
        if change.bot and not self.include_bots:
            return "a bot edit"
        if self._titles and not any(pattern.search(change.title) for pattern in self._titles):
            return "a title outside the filter"
        return None


async def stream_changes(url: str, *, last_event_id: str | None = None, user_agent: str,
                         stop: Callable[[], bool] = lambda: False,
                         client: httpx.AsyncClient | None = None) -> AsyncIterator[tuple[str | None, str]]:
    """``(event id, JSON text)`` of every event of the stream at ``url``, from after
    ``last_event_id``; reconnects on its own (as ``Last-Event-ID`` says) until ``stop()``. An answer
    that will not change by asking again (a 4xx other than 429, or no event stream) is a ClaireError."""
    own = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=120.0))
    wait, last = 1.0, last_event_id
    try:
        while not stop():
            headers = {"User-Agent": user_agent, "Accept": "text/event-stream"}
            if last:
                headers["Last-Event-ID"] = last
            try:
                async with aconnect_sse(client, "GET", url, headers=headers) as source:
                    status = source.response.status_code
                    if 400 <= status < 500 and status not in (408, 429):
                        raise ClaireError(f"the event stream at {redact(url)} refused the request: HTTP {status}")
                    if status >= 400:
                        raise httpx.HTTPStatusError(f"HTTP {source.response.status_code}", request=source.response.request,
                                                    response=source.response)
                    async for event in source.aiter_sse():
                        if event.retry:
                            wait = max(event.retry / 1000, 0.1)
                        if event.id:
                            last = event.id
                        if event.event not in ("message", "") or not event.data:
                            continue
                        yield event.id or last, event.data
                        if stop():
                            return
                        wait = 1.0  # events flow again: start the backoff afresh
                log.info("the event stream closed; reconnecting after %s", last or "its start")
            except SSEError as error:
                raise ClaireError(f"{redact(url)} is not an event stream ({error})") from None
            except httpx.HTTPError as error:
                log.warning("the event stream at %s failed (%s); reconnecting in %.0f s", redact(url), redact(str(error)), wait)
                await asyncio.sleep(wait)
                wait = min(wait * 2, MAX_BACKOFF)
    finally:
        if own:
            await client.aclose()


async def replay_changes(path: Path, *, after: int = 0) -> AsyncIterator[tuple[str, str]]:
    """``(line number, JSON text)`` of a recording's events after line ``after`` (a bad line is
    yielded too: the patrol says so and goes on)."""
    for line in read_jsonl(Path(path), what="recorded events", hint="a JSONL file of recentchange events"):
        if line.number <= after:
            continue
        yield str(line.number), line.raw.decode("utf-8-sig", "replace")  # a leading byte-order mark is no part of it
        await asyncio.sleep(0)


def replay_position(position: str | None) -> int:
    """The line of a recording to go on after (0 for none)."""
    if not position:
        return 0
    try:
        return int(position)
    except ValueError:
        raise DatasetError(f"the saved replay position {position!r} is not a line number") from None


def describe_event(data: Any) -> str:
    """A short, printable description of an event's text for log lines."""
    text = str(data)
    return text if len(text) <= 80 else text[:77] + "..."
