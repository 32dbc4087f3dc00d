"""Which page and which site a URL names: the one home for URL identity.

- :func:`archived` — the page an archive URL keeps (web.archive.org, archive.today and its
  mirrors, Google's cache), else the URL itself: a source is rated and counted as the page it
  archives;
- :func:`without_credentials` — a URL without the user name and password it may carry;
- :func:`host_of` — the host a URL names, lower-case, without ``www.``, a trailing dot or
  credentials, after unwrapping an archive;
- :func:`page_key` — a URL compared loosely (no scheme, credentials, ``www.``, trailing dot,
  fragment or trailing slash), so a sources file's ``www.`` or ``/`` still matches;
- :func:`site_of` — the registered domain on the Public Suffix List, private suffixes included,
  so ``uk.reuters.com`` is ``reuters.com`` while two blogs on ``blogspot.com`` stay apart.

Used by the citation checker, the source reader, the reliability list, the resolver and its
agreement count. Never raises on a malformed URL: it gives what it can (or None / "").
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import tldextract

_ARCHIVE_PATH = re.compile(r"^/(?:web/|o/[A-Za-z0-9]+/|newest/|oldest/)?(?:[0-9*.\-]{1,20}(?:[a-z]{2}_)?/)?(?P<url>https?:/{1,2}.+)$",
                           re.IGNORECASE)
_ARCHIVE_TODAY = ("archive.today", "archive.ph", "archive.is", "archive.li", "archive.vn", "archive.fo", "archive.md")


@lru_cache(maxsize=2)
def _extract(private: bool = True) -> tldextract.TLDExtract:
    # the Public Suffix List snapshot the package ships: no download, no cache folder
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=private)


def _split(url: str):
    try:
        return urlsplit(url.strip())
    except ValueError:
        return None


def _hostname(parts) -> str:
    try:
        host = parts.hostname or ""
    except ValueError:
        return ""
    return host.lower().rstrip(".").removeprefix("www.")


def archived(url: str) -> str:
    """The page an archive URL keeps; any other URL as it is."""
    url = url.strip()
    for _ in range(3):  # an archive of an archive, at most a few deep
        parts = _split(url)
        if parts is None:
            return url
        host = _hostname(parts)
        inner = None
        if host in ("web.archive.org", "wayback.archive.org") or host in _ARCHIVE_TODAY:
            path = url.split(parts.netloc, 1)[-1]  # the path with the inner URL's own query
            found = _ARCHIVE_PATH.match(path)
            inner = found.group("url") if found else None
        elif host == "webcache.googleusercontent.com":
            query = (parse_qs(parts.query).get("q") or [""])[0]
            inner = query.removeprefix("cache:") if query.startswith("cache:") else None
            if inner and not inner.startswith(("http://", "https://")):
                inner = "https://" + inner.split(" ", 1)[0]
        if not inner:
            return url
        url = re.sub(r"^(https?):/(?!/)", r"\1://", unquote(inner) if "%3A" in inner[:12].upper() else inner)
    return url


def without_credentials(url: str) -> str:
    """``url`` without the user name and password it may carry (``https://user:KEY@host/``)."""
    parts = _split(url)
    if parts is None or "@" not in parts.netloc:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=netloc))


def host_of(url: str | None) -> str:
    """The host a URL names (after unwrapping an archive), lower-case, without ``www.``, a trailing
    dot or credentials; "" when there is none."""
    if not url or not url.strip():
        return ""
    parts = _split(archived(url))
    return _hostname(parts) if parts is not None else ""


def page_key(url: str | None) -> str | None:
    """A URL compared loosely: the archived page, no scheme, credentials, ``www.``, trailing dot,
    fragment or trailing slash, lower-case host."""
    if not url or not url.strip():
        return None
    target = archived(url)
    parts = _split(target)
    if parts is None or not parts.netloc:
        return target.strip().rstrip("/").lower()
    host = _hostname(parts)
    try:
        port = parts.port
    except ValueError:
        port = None
    port_part = f":{port}" if port and port not in (80, 443) else ""
    return f"{host}{port_part}{parts.path.rstrip('/')}" + (f"?{parts.query}" if parts.query else "")


def site_of(url: str | None) -> str:
    """The site a URL belongs to: its registered domain (private suffixes such as ``blogspot.com``
    count as suffixes), else its host (an address, ``localhost``); "" when there is none."""
    host = host_of(url)
    if not host:
        return ""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    found = _extract()(host)
    registered = f"{found.domain}.{found.suffix}" if found.domain and found.suffix else ""
    return registered or host


def is_public_suffix(domain: str) -> bool:
    """Whether ``domain`` is a top-level suffix on the Public Suffix List (``com``, ``co.uk``): no one
    site, so never a row of a list of sites. A private suffix (``blogspot.com``) is one company's
    service, which such a list may rate as a whole."""
    domain = domain.strip().lower().rstrip(".")
    if not domain:
        return True
    found = _extract(private=False)(domain)
    return not found.domain and bool(found.suffix)
