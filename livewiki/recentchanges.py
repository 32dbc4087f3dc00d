"""The live edits of a wiki: Wikimedia EventStreams' ``recentchange`` stream, or a recording of it.

:func:`stream_changes` follows the server-sent-event stream (one JSON change per event) across
dropped connections, asking to go on after the last event it saw (``Last-Event-ID``, as the
EventStreams service expects), waiting after every close as the server's ``retry`` field says,
longer while connections bring nothing.
:func:`replay_changes` reads recorded events (JSON lines in the stream's own shape). Both yield
``(position, data)``: the position to save so a restart goes on after that event (the stream's
event id, or the recording's line number), and the event's JSON text. :func:`parse_change` reads
one event into a :class:`Change` (refusing, with a reason, an event no wiki would send: text that
is not Unicode, numbers out of range, a huge event); :class:`ChangeFilter` keeps what the patrol
should check (by default English Wikipedia's articles, edits and page creations, no bots). A
Wikimedia wiki's address follows from its id (:func:`wiki_host`), so an event cannot point the
patrol at another server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from httpx_sse import SSEError, aconnect_sse

from claire.sources.urls import without_credentials
from claire.errors import ClaireError, ConfigError, DatasetError, redact
from claire.files import LONE_SURROGATE, is_text, read_jsonl, valid_text

log = logging.getLogger(__name__)

DEFAULT_STREAM = "https://stream.wikimedia.org/v2/stream/recentchange"
MAX_BACKOFF = 60.0
MAX_EVENT_CHARS = 1_000_000  # a change event is a few hundred bytes; one this large is not one
MAX_EVENT_ID_CHARS = 1024  # EventStreams' ids are short JSON; a longer one is never sent back
MAX_NUMBER = 2**53  # namespaces and revision ids beyond this are no wiki's
LATEST_TIMESTAMP = 1e11  # seconds since the epoch (the year 5138): later is no real edit's time

# Wikimedia's wiki ids are a language code and a project (enwiki, dewiktionary, zh_min_nanwiki);
# a few name a wiki of their own. The id says where the wiki is, so an event cannot send the
# patrol to another server.
PROJECTS = {"wiki": "wikipedia.org", "wiktionary": "wiktionary.org", "wikibooks": "wikibooks.org",
            "wikinews": "wikinews.org", "wikiquote": "wikiquote.org", "wikisource": "wikisource.org",
            "wikiversity": "wikiversity.org", "wikivoyage": "wikivoyage.org"}
SPECIAL_WIKIS = {"commonswiki": "commons.wikimedia.org", "metawiki": "meta.wikimedia.org",
                 "specieswiki": "species.wikimedia.org", "wikidatawiki": "www.wikidata.org",
                 "mediawikiwiki": "www.mediawiki.org", "wikifunctionswiki": "www.wikifunctions.org",
                 "incubatorwiki": "incubator.wikimedia.org", "foundationwiki": "foundation.wikimedia.org",
                 "outreachwiki": "outreach.wikimedia.org", "sourceswiki": "wikisource.org",
                 "testwikidatawiki": "test.wikidata.org", "be_x_oldwiki": "be-tarask.wikipedia.org"}
_LANGUAGE = re.compile(r"[a-z][a-z0-9_]{0,30}")
_SCRIPT_PATH = re.compile(r"(/[A-Za-z0-9_.-]+)*")


def wiki_host(wiki: str) -> str | None:
    """The host of the Wikimedia wiki with this id (``enwiki``: ``en.wikipedia.org``), or None
    for an id that names no Wikimedia wiki."""
    if wiki in SPECIAL_WIKIS:
        return SPECIAL_WIKIS[wiki]
    for project in sorted(PROJECTS, key=len, reverse=True):
        language = wiki.removesuffix(project)
        if language != wiki and _LANGUAGE.fullmatch(language):
            return f"{language.replace('_', '-')}.{PROJECTS[project]}"
    return None


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
    server_url: str  # as the event gave it, without credentials
    server_script_path: str
    timestamp: float | None = None  # seconds since the epoch, when the change was made
    user: str = ""
    comment: str = ""
    event_id: str | None = None  # the event's meta.id

    def _site(self) -> str:
        """The wiki's address: the one its id names (a Wikimedia wiki), else the event's server."""
        host = wiki_host(self.wiki)
        given = urlsplit(self.server_url)
        if host is not None and (given.hostname or "").lower() == host:
            return f"https://{host}"
        return self.server_url.rstrip("/")

    def _script(self) -> str:
        path = self.server_script_path.rstrip("/") or "/w"
        return path if _SCRIPT_PATH.fullmatch(path) else "/w"

    def api_url(self) -> str:
        """The wiki's MediaWiki Action API, from the wiki's id: ``https://HOST/w/api.php`` for the
        Wikimedia wiki it names. A ClaireError when the event's ``server_url`` is not that wiki's
        (an event must not send the patrol's requests elsewhere; ``watch.api_url`` names the API
        of a wiki outside Wikimedia)."""
        host = wiki_host(self.wiki)
        given = (urlsplit(self.server_url).hostname or "").lower()
        if host is None or given != host:
            expected = f"https://{host}" if host else "a Wikimedia wiki's address"
            raise ClaireError(f"the event places wiki {self.wiki!r} at {self.server_url!r}, which is not its address "
                              f"({expected}); it was not fetched (set watch.api_url to patrol a wiki outside Wikimedia)")
        return f"https://{host}/w/api.php"

    def diff_url(self) -> str:
        """The page showing the edit's difference (or the new page, for a creation)."""
        script = f"{self._site()}{self._script()}/index.php"
        if self.old_revision:
            return f"{script}?diff={self.new_revision}&oldid={self.old_revision}"
        return f"{script}?oldid={self.new_revision}"

    def page_url(self) -> str:
        """The edited page's address."""
        return f"{self._site()}/wiki/{self.title.replace(' ', '_')}"


def _text(value: Any, what: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValueError(f"{what} is not text")
    text = str(value)
    if not is_text(text):
        raise ValueError(f"{what} holds {LONE_SURROGATE}")
    return text


def _whole(value: Any, what: str) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) <= 20:
        value = int(value)
    if isinstance(value, float) and value.is_integer():  # JSON's 1e3, not Infinity, NaN or 1.5
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -MAX_NUMBER <= value <= MAX_NUMBER:
        raise ValueError(f"{what} is not a whole number a wiki gives")
    return value


def _moment(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value) if len(value) <= 40 else math.inf
        except ValueError:
            raise ValueError("timestamp is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= LATEST_TIMESTAMP:
        raise ValueError("timestamp is not a time in seconds since 1970")
    return float(value)


def parse_change(data: str) -> Change:
    """One event's JSON as a Change; a ValueError saying what is wrong when it is not one (not
    JSON, not text, numbers no wiki gives, too large)."""
    if len(data) > MAX_EVENT_CHARS:
        raise ValueError(f"{len(data):,} characters long (an event is a few hundred)")
    try:
        event = json.loads(data)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(event, dict):
        raise ValueError("not a JSON object")
    missing = [key for key in ("wiki", "title", "namespace", "type", "server_url") if key not in event]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    revision, meta = event.get("revision") or {}, event.get("meta") or {}
    if not isinstance(revision, dict) or not isinstance(meta, dict):
        raise ValueError("revision and meta must be objects")
    namespace = _whole(event["namespace"], "namespace")
    old = _whole(revision["old"], "revision.old") if revision.get("old") else None
    new = _whole(revision["new"], "revision.new") if revision.get("new") else None
    if (old is not None and old < 0) or (new is not None and new < 0):
        raise ValueError("a revision id is negative")
    return Change(
        wiki=_text(event["wiki"], "wiki", required=True), title=_text(event["title"], "title", required=True),
        namespace=namespace, type=_text(event["type"], "type", required=True), bot=bool(event.get("bot")),
        old_revision=old, new_revision=new,
        server_url=without_credentials(_text(event["server_url"], "server_url", required=True)),
        server_script_path=_text(event.get("server_script_path"), "server_script_path") or "/w",
        timestamp=_moment(event.get("timestamp")), user=_text(event.get("user"), "user"),
        comment=_text(event.get("comment"), "comment"), event_id=_text(meta.get("id"), "meta.id") or None,
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


def usable_event_id(value: str | None) -> bool:
    """Whether a stream's event id can be saved as the position and sent back in ``Last-Event-ID``:
    printable ASCII (a header holds nothing else safely) of a bounded length."""
    return bool(value) and len(value or "") <= MAX_EVENT_ID_CHARS and value.isascii() and value.isprintable()  # type: ignore[union-attr]


async def pause(seconds: float, stop: Callable[[], bool]) -> None:
    """Wait ``seconds``, or less when ``stop()`` turns true meanwhile."""
    end = time.monotonic() + seconds
    while not stop() and (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(left, 0.25))


async def stream_changes(url: str, *, last_event_id: str | None = None, user_agent: str,
                         stop: Callable[[], bool] = lambda: False,
                         client: httpx.AsyncClient | None = None) -> AsyncIterator[tuple[str | None, str]]:
    """``(position, JSON text)`` of every event of the stream at ``url``, from after
    ``last_event_id``; reconnects on its own (as ``Last-Event-ID`` says) until ``stop()``, after
    every close waiting what the server's ``retry`` field asks (a second if it said nothing),
    twice as long for each connection in a row that brought no event (at most a minute). The
    position is the latest event id that can be sent back (:func:`usable_event_id`; an event whose
    id cannot keeps the one before). An answer that will not change by asking again (a 4xx other
    than 429, or no event stream) is a ClaireError."""
    own = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=120.0))
    last = last_event_id if usable_event_id(last_event_id) else None
    if last_event_id and last is None:
        log.warning("the saved stream position %s is not an event id that can be sent back; reading from the "
                    "stream's present", describe_event(last_event_id))
    reconnect, empty, warned = 1.0, 0, False  # the server's retry; connections in a row without an event
    try:
        while not stop():
            headers = {"User-Agent": user_agent, "Accept": "text/event-stream"}
            if last:
                headers["Last-Event-ID"] = last
            delivered = False
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
                            reconnect = min(max(event.retry / 1000, 0.1), MAX_BACKOFF)
                        if event.id and event.id != last:
                            if usable_event_id(event.id):
                                last = event.id
                            elif not warned:
                                warned = True
                                log.warning("the event stream sent an id that cannot be sent back (%s); the position "
                                            "stays at the last one that can", describe_event(event.id))
                        if event.event not in ("message", "") or not event.data:
                            continue
                        delivered = True
                        yield last, event.data
                        if stop():
                            return
                log.info("the event stream closed; reconnecting after %s", last or "its start")
            except SSEError as error:
                raise ClaireError(f"{redact(url)} is not an event stream ({error})") from None
            except httpx.HTTPError as error:
                log.warning("the event stream at %s failed (%s)", redact(url), redact(str(error)))
            empty = 0 if delivered else empty + 1
            await pause(min(reconnect * 2 ** min(empty, 16), MAX_BACKOFF), stop)
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
    """A short, printable description of an event's text for log lines (valid Unicode, control
    characters escaped)."""
    text = str(data)
    text = text if len(text) <= 80 else text[:77] + "..."
    return valid_text(text if text.isprintable() else repr(text)[1:-1])
