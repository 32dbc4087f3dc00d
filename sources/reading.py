"""Reading a cited page: from a local sources file, the disk cache, or a guarded fetch.

:class:`SourceReader.read` answers a :class:`SourcePage` for a URL: its main text, title, site,
publication date, where it came from (``file``, ``cache``, ``fetch``) and when it was fetched —
or, when it could not be read, ``error`` saying why ("timed out", "HTTP 404", "a PDF", "larger
than 3,000,000 bytes", "redirects to a private address", …). A page that cannot be read is a
signal for the resolver, never an exception and never a verdict.

Pages are looked for in this order: the shipped pages the demo corpus cites, a sources file
(``resolve.sources``), the cache, then the web. The fetch is guarded: only http and https; every address a host name resolves to (and every
redirect's) must be public unless ``allow_private``; at most ``max_redirects`` redirects, followed
one by one; the body is read as a stream and cut off past ``max_bytes``; the whole fetch has one
deadline. HTML goes through trafilatura for the main text and the publication date; plain text is
taken as it is; anything else (PDF, images, binaries) is refused by its type.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import re
import socket
from functools import lru_cache
from importlib.resources import files
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel

from claire.settings import ResolveConfig, cache_dir
from claire import __version__
from claire.errors import DatasetError
from claire.files import read_jsonl, write_atomically
from claire.sources.urls import page_key

USER_AGENT = (f"CLAIRE-source-reader/{__version__} (reads the sources Wikipedia articles cite; set resolve.user_agent "
              f"to add your contact) httpx/{httpx.__version__}")
"""Sent with every fetch unless ``resolve.user_agent`` gives one with the contact of whoever runs it."""
_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "")
_MIN_TEXT_CHARS = 40
_NOT_THE_PAGE = re.compile(
    r"\b(?:404\b|page not found|not be found|access denied|403 forbidden|forbidden\b|50[234] \w|"
    r"subscribe (?:to|now)|subscribers? only|sign in to (?:read|continue)|log ?in to (?:read|continue)|"
    r"paywall|(?:accept|enable|allow) (?:all )?cookies|cookie (?:settings|preferences|consent)|"
    r"(?:enable|requires?) javascript|javascript is (?:disabled|required)|are you a robot|captcha|"
    r"temporarily unavailable|unusual traffic)", re.IGNORECASE)
_SHORT_PAGE_CHARS = 1500
"""A text this short that speaks of an error, a paywall or a cookie wall is that wall, not the page."""


def unavailable_reason(text: str) -> str | None:
    """Why a source's text is plainly not the page it stands for (None when it may be): no text at
    all, or a short text that is an error page, a paywall or a cookie wall."""
    body = " ".join((text or "").split())
    if not body:
        return "the source has no text"
    if len(body) < _SHORT_PAGE_CHARS and (found := _NOT_THE_PAGE.search(body)):
        return f"the source's text is an error page, a paywall or a cookie wall ('{found.group(0)}')"
    return None


class SourcePage(BaseModel):
    """One cited page as read: its text (empty when it could not be read, with ``error`` saying why)."""

    url: str
    title: str = ""
    site: str = ""
    date: str | None = None
    text: str = ""
    origin: Literal["file", "cache", "fetch", "none"] = "none"
    fetched_at: str | None = None
    error: str | None = None

    @property
    def readable(self) -> bool:
        """Whether there is text to judge."""
        return self.error is None and bool(self.text.strip())


class FetchRefused(Exception):
    """A fetch the guard or the page itself stopped (its message is the reason shown)."""


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether an address is a public one, looking through the IPv6 forms that carry an IPv4
    address (mapped, NAT64, 6to4, Teredo)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if address in _NAT64:
            inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.teredo:
            inner = address.teredo[1]
        if address in _NAT64_LOCAL or (inner is not None and not is_public(inner)):
            return False
    return address.is_global and not address.is_multicast


def checked_address(host: str, *, allow_private: bool) -> str:
    """The one address of ``host`` a fetch connects to: every address it resolves to must be public
    (unless ``allow_private``), and the fetch connects to this one, never resolving again, so a name
    that answers differently the second time (DNS rebinding) cannot reach a private address."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as error:
        raise FetchRefused(f"cannot resolve {host[:80]}") from error
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise FetchRefused(f"cannot resolve {host[:80]}")
    if not allow_private and not all(is_public(address) for address in addresses):
        raise FetchRefused(f"{host[:80]} is a private or loopback address (resolve.allow_private is off)")
    return str(addresses[0])


def local_pages(path: Path) -> dict[str, SourcePage]:
    """The pages of a web-docs file (``{url, title?, text, date?, site?}`` a line), by URL; a bad
    line is a DatasetError naming FILE:LINE."""
    pages: dict[str, SourcePage] = {}
    for line in read_jsonl(Path(path), what="sources", hint="a JSONL file with one page (url, title, text) a line"):
        record, problem = line.value, line.problem
        if problem is None and not (isinstance(record, dict) and isinstance(record.get("url"), str)
                                    and isinstance(record.get("text"), str)):
            problem = "expected an object with string fields url and text"
        if problem is not None:
            raise DatasetError(f"{path}:{line.number}: {problem}")
        pages[record["url"].strip()] = SourcePage(
            url=record["url"].strip(), title=str(record.get("title") or ""), site=str(record.get("site") or ""),
            date=record.get("date") if isinstance(record.get("date"), str) else None, text=record["text"], origin="file")
    return pages


@lru_cache(maxsize=1)
def bundled_pages() -> dict[str, SourcePage]:
    """The pages the demo corpus and the example sources cite, shipped with CLAIRE
    (``indexes/data/web_sources.jsonl`` and ``demo_sources.jsonl``), so the keyless tour reads them."""
    data = files("claire.indexes") / "data"
    pages: dict[str, SourcePage] = {}
    for name in ("web_sources.jsonl", "demo_sources.jsonl"):
        pages.update(local_pages(Path(str(data / name))))
    return pages


class SourceReader:
    """Reads cited pages (see the module docstring); one per command, shared by every resolve."""

    def __init__(self, settings: ResolveConfig, *, pages: dict[str, SourcePage] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        given = {**bundled_pages(), **(pages or {})}
        if settings.sources is not None:
            given.update(local_pages(settings.sources))
        self.pages = {page_key(url) or url: page for url, page in given.items()}  # www., a slash: the same page
        self.cache = settings.cache_dir or cache_dir() / "sources"
        self.transport = transport
        self._inflight: dict[str, asyncio.Task[SourcePage]] = {}

    def _cache_file(self, url: str) -> Path:
        return self.cache / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"

    def cached(self, url: str) -> SourcePage | None:
        """The page kept from an earlier fetch of this very URL, if any and not older than
        ``resolve.cache_days``."""
        try:
            page = SourcePage.model_validate_json(self._cache_file(url).read_bytes())
        except (OSError, ValueError):
            return None
        if page.url != url:  # another URL's page under this name: never served for this one
            return None
        try:
            fetched = datetime.fromisoformat(page.fetched_at or "")
        except ValueError:
            return None
        if fetched.tzinfo is None or datetime.now(timezone.utc) - fetched > timedelta(days=self.settings.cache_days):
            return None
        return page.model_copy(update={"origin": "cache"})

    def _keep(self, page: SourcePage) -> None:
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            write_atomically(self._cache_file(page.url), page.model_dump_json())
        except OSError:
            pass  # a cache that cannot be written only costs a fetch next time

    async def read(self, url: str) -> SourcePage:
        """The page at ``url``: the sources file's, else the cache's, else fetched (when allowed)."""
        url = url.strip()
        given = self.pages.get(page_key(url) or url)
        if given is not None:
            return given
        cached = self.cached(url)
        if cached is not None:
            return cached
        if not self.settings.fetch:
            return SourcePage(url=url, error="could not read: not in the sources file and fetching is off")
        if url not in self._inflight:  # one fetch per URL, however many sides cite it
            self._inflight[url] = asyncio.ensure_future(self._fetch(url))
        return await asyncio.shield(self._inflight[url])

    async def _fetch(self, url: str) -> SourcePage:
        try:
            page = await asyncio.wait_for(self._get(url), timeout=self.settings.fetch_timeout)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            return SourcePage(url=url, error=f"could not read: timed out after {self.settings.fetch_timeout:g} s")
        except FetchRefused as refused:
            return SourcePage(url=url, error=f"could not read: {refused}")
        except httpx.HTTPError as error:
            return SourcePage(url=url, error=f"could not read: {type(error).__name__}")
        except Exception as error:  # a malformed URL, a broken extractor: this source only, never the resolve
            return SourcePage(url=url, error=f"could not read: {_one_line(error)}")
        page = page.model_copy(update={"fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        if page.readable:
            self._keep(page)
        return page

    def _check_target(self, url: str) -> tuple[str, dict[str, str], dict[str, str]]:
        """The URL to request (its host replaced by the address checked), its Host header and the
        TLS server name: the connection goes where the guard looked, and nowhere else."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused(f"not an http(s) URL: {url[:80]}")
        host = parts.hostname
        address = checked_address(host, allow_private=self.settings.allow_private)
        port = parts.port
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit(parts._replace(netloc=literal + (f":{port}" if port else "")))
        named = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
        return pinned, {"Host": named}, ({"sni_hostname": host} if parts.scheme == "https" else {})

    async def _get(self, url: str) -> SourcePage:
        settings = self.settings
        async with httpx.AsyncClient(transport=self.transport, follow_redirects=False, timeout=settings.fetch_timeout,
                                     headers={"User-Agent": settings.user_agent or USER_AGENT, "Accept": "text/html, text/plain;q=0.9"}) as client:
            target = url
            for _ in range(settings.max_redirects + 1):
                pinned, headers, extensions = await asyncio.to_thread(self._check_target, target)
                async with client.stream("GET", pinned, headers=headers, extensions=extensions) as response:
                    if response.is_redirect:
                        location = response.headers.get("location")
                        if not location:
                            raise FetchRefused(f"HTTP {response.status_code} without a Location")
                        target = urljoin(target, location)
                        continue
                    if response.status_code >= 400:
                        raise FetchRefused(f"HTTP {response.status_code}")
                    kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                    if kind not in _TEXT_TYPES:
                        raise FetchRefused("a PDF" if kind == "application/pdf" else f"not a text page ({kind})")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > settings.max_bytes:
                            raise FetchRefused(f"larger than {settings.max_bytes:,} bytes")
                    # extraction is CPU work: off the event loop, and inside the fetch's deadline
                    return await asyncio.to_thread(page_from_body, url, bytes(body), kind, response.encoding)
            raise FetchRefused(f"more than {settings.max_redirects} redirects")


def _one_line(error: BaseException) -> str:
    """An unexpected failure as one short line: its type and the first line of its message."""
    message = (str(error).strip().splitlines() or [""])[0][:160]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def page_from_body(url: str, body: bytes, kind: str, encoding: str | None) -> SourcePage:
    """A fetched body as a page: HTML through trafilatura (main text, title, site, date), plain
    text as it is; an empty, binary or undecodable body is a page that says so."""
    if body[:5] == b"%PDF-":
        raise FetchRefused("a PDF")
    if b"\x00" in body[:4096]:
        raise FetchRefused("a binary file")
    try:
        text = body.decode(encoding or "utf-8")
    except (UnicodeDecodeError, LookupError):
        text = body.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(10, len(text) // 50):
            raise FetchRefused("text in an encoding that cannot be read") from None
    if kind == "text/plain":
        page = SourcePage(url=url, text=text.strip(), origin="fetch")
    else:
        import trafilatura  # a heavy import, paid only when a page is fetched

        found = trafilatura.bare_extraction(text, url=url, with_metadata=True, include_comments=False)
        if found is None:
            raise FetchRefused("the page is empty: no main text found (behind a paywall or a script?)")
        page = SourcePage(url=url, title=found.title or "", site=found.sitename or "", date=found.date,
                          text=(found.text or "").strip(), origin="fetch")
    if len(page.text) < _MIN_TEXT_CHARS:
        raise FetchRefused("the page is empty (or behind a paywall or a script)")
    if (wall := unavailable_reason(page.text)) is not None:
        raise FetchRefused(wall)
    return page
