"""Revisions from a wiki's MediaWiki Action API, politely.

One query fetches an edit's old and new revision text
(``action=query&prop=revisions&revids=OLD|NEW&rvprop=content|ids&rvslots=main&format=json&formatversion=2``,
plus the page's categories when a category filter is set). Requests send a descriptive
User-Agent (Wikimedia's API policy asks for one) and ``maxlag``, so a lagging wiki can ask us to
wait; 429 and 5xx answers, dropped connections, ``maxlag`` and the API's errors that say the wiki
failed for now (an internal database error, read-only mode, rate limits) are retried with the project's
one retry policy, waiting what ``Retry-After`` asks; when they go on failing the error is a
:class:`WikiUnavailable` (worth trying again later), unlike a refusal that will not change. A
revision the API no longer has (deleted or suppressed) or a deleted page is not an error: the
answer says so and the patrol skips the edit. Texts are read as valid Unicode (half a surrogate
pair becomes U+FFFD).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from claire import __version__
from claire.errors import ClaireError
from claire.files import valid_text
from claire.retrying import RETRY_STATUSES, TransientError, async_retrying, retry_after

USER_AGENT = (f"CLAIRE-patrol/{__version__} (checks new edits for corpus-level inconsistencies; set watch.user_agent "
              f"to add your contact) httpx/{httpx.__version__}")
"""Sent with every request, as Wikimedia's User-Agent policy asks (tool name and version; the
policy also asks for a contact, which only the person running the patrol can give:
``watch.user_agent``)."""


TRANSIENT_CODES = frozenset({"readonly", "ratelimited", "actionthrottledtext", "internal_api_error"})
"""Action API error codes (in an HTTP 200 answer) that say the wiki failed for now, not that the
request is wrong: the wiki is read-only for maintenance, the client is rate-limited, or the server
met an internal error (``internal_api_error_DBConnectionError`` and its kin)."""


def transient_api_error(code: Any) -> bool:
    """Whether an Action API error code is worth asking again for (see :data:`TRANSIENT_CODES`)."""
    code = str(code or "")
    return code in TRANSIENT_CODES or code.startswith("internal_api_error_")


class WikiUnavailable(ClaireError):
    """The wiki's API could not be reached or kept failing (5xx, 429, timeouts, maxlag) through
    every retry: asking again later may well work."""


@dataclass
class Revisions:
    """An edit's revisions as the API gave them: the page, the texts found (by revision id; a
    revision the API no longer has, or whose text is hidden, is absent), whether the page is gone,
    and the page's categories."""

    page_id: int | None = None
    texts: dict[int, str] = field(default_factory=dict)
    page_missing: bool = False
    categories: list[str] = field(default_factory=list)


class MediaWikiClient:
    """Fetches revisions over the Action API with retries and a shared HTTP client."""

    def __init__(self, *, user_agent: str = USER_AGENT, timeout: float = 30.0, max_attempts: int = 5,
                 base_wait: float = 1.0, max_wait: float = 60.0, maxlag: int = 5):
        self.max_attempts = max_attempts
        self.base_wait = base_wait
        self.max_wait = max_wait
        self.maxlag = maxlag
        self._client = httpx.AsyncClient(timeout=timeout, headers={"User-Agent": user_agent})
        self.sleep: Callable[[float], Any] | None = None  # between attempts (tests give a clock of their own)

    async def revisions(self, api_url: str, revision_ids: list[int], *, categories: bool = False) -> Revisions:
        """The texts of ``revision_ids`` (of one page) and what the API said about them."""
        params = {"action": "query", "prop": "revisions|categories" if categories else "revisions",
                  "revids": "|".join(str(r) for r in revision_ids), "rvprop": "content|ids", "rvslots": "main",
                  "format": "json", "formatversion": "2"}
        if categories:
            params["cllimit"] = "max"
        return read_revisions(await self.query(api_url, params))

    async def query(self, api_url: str, params: dict[str, str]) -> Any:
        """One Action API request (``maxlag`` added), retried while the wiki fails for now."""
        params = {**params, "maxlag": str(self.maxlag)}
        policy = async_retrying(self.max_attempts, base=self.base_wait, max_wait=self.max_wait, cap=self.max_wait,
                                sleep=self.sleep)
        try:
            async for attempt in policy:
                with attempt:
                    data = await self._get(api_url, params)
        except TransientError as error:
            raise WikiUnavailable(f"the MediaWiki API at {api_url} failed after {self.max_attempts} attempts ({error})") from None
        return data

    async def category_members(self, api_url: str, category: str, *, namespace: int = 0, limit: int = 100_000) -> list[str]:
        """The titles of a category's members in ``namespace`` (0: articles; 1: their talk pages, as a
        WikiProject's assessment categories hold them), every continuation followed, at most ``limit``."""
        name = category if category.lower().startswith("category:") else f"Category:{category}"
        params = {"action": "query", "list": "categorymembers", "cmtitle": name, "cmnamespace": str(namespace),
                  "cmlimit": "max", "cmtype": "page", "format": "json", "formatversion": "2"}
        titles: list[str] = []
        while len(titles) < limit:
            data = await self.query(api_url, params)
            members = (data.get("query") or {}).get("categorymembers") if isinstance(data, dict) else None
            if not isinstance(members, list):
                raise ClaireError(f"the MediaWiki API at {api_url} gave no member list for {name!r}")
            titles += [str(m["title"]) for m in members if isinstance(m, dict) and m.get("title")]
            more = data.get("continue") if isinstance(data, dict) else None
            if not isinstance(more, dict) or "cmcontinue" not in more:
                break
            params = {**params, "cmcontinue": str(more["cmcontinue"])}
        return titles[:limit]

    async def langlinks(self, api_url: str, titles: list[str], *, languages: list[str] | None = None) -> dict[str, dict[str, str]]:
        """Each title's counterparts in other editions (``prop=langlinks``): ``{title: {language:
        title}}``, fifty titles a request, every continuation followed; ``languages`` keeps those."""
        found: dict[str, dict[str, str]] = {}
        for start in range(0, len(titles), 50):
            params = {"action": "query", "prop": "langlinks", "titles": "|".join(titles[start:start + 50]),
                      "lllimit": "max", "redirects": "1", "format": "json", "formatversion": "2"}
            while True:
                data = await self.query(api_url, params)
                pages = (data.get("query") or {}).get("pages") if isinstance(data, dict) else None
                if not isinstance(pages, list):
                    raise ClaireError(f"the MediaWiki API at {api_url} gave no page list for the interlanguage links")
                for page in pages:
                    if not isinstance(page, dict) or not page.get("title"):
                        continue
                    links = found.setdefault(str(page["title"]), {})
                    for link in page.get("langlinks") or []:
                        if isinstance(link, dict) and link.get("lang") and link.get("title"):
                            if languages is None or link["lang"] in languages:
                                links[str(link["lang"])] = str(link["title"])
                more = data.get("continue") if isinstance(data, dict) else None
                if not isinstance(more, dict) or "llcontinue" not in more:
                    break
                params = {**params, "llcontinue": str(more["llcontinue"])}
        return found

    async def page_wikitext(self, api_url: str, title: str) -> str:
        """The current wikitext of page ``title`` (``action=parse``); a clear error when the answer
        holds none."""
        data = await self.query(api_url, {"action": "parse", "page": title, "prop": "wikitext", "format": "json",
                                          "formatversion": "2"})
        parsed = data.get("parse") if isinstance(data, dict) else None
        text = parsed.get("wikitext") if isinstance(parsed, dict) else None
        if not isinstance(text, str):
            raise ClaireError(f"the MediaWiki API at {api_url} gave no wikitext for {title!r}")
        return text

    async def _get(self, url: str, params: dict[str, str]) -> Any:
        try:
            response = await self._client.get(url, params=params)
        except httpx.TransportError as error:
            raise TransientError(f"{type(error).__name__}: {error}") from None
        if response.status_code in RETRY_STATUSES:
            raise TransientError(f"HTTP {response.status_code}", retry_after(response.headers))
        if response.status_code != 200:
            raise ClaireError(f"the MediaWiki API at {url} refused the request: HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise ClaireError(f"the MediaWiki API at {url} answered with something other than JSON") from None
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and error.get("code") == "maxlag":  # the wiki is lagging: wait as it says
            raise TransientError(f"maxlag: {error.get('info') or 'the wiki is lagging'}",
                                 retry_after(response.headers) or 5.0)
        if isinstance(error, dict) and transient_api_error(error.get("code")):  # a failure of the wiki's own, for now
            raise TransientError(f"{error.get('code')}: {error.get('info') or 'the wiki failed for now'}",
                                 retry_after(response.headers))
        if isinstance(error, dict):
            raise ClaireError(f"the MediaWiki API at {url} said {error.get('code')}: {error.get('info')}")
        return data

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()


def read_revisions(data: Any) -> Revisions:
    """The revisions of an Action API ``query`` answer (formatversion 2); a ClaireError for an
    answer of another shape."""
    try:
        return _revisions(data)
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
        raise ClaireError("the MediaWiki API answered with something other than a query of revisions") from None


def _revisions(data: Any) -> Revisions:
    query = (data or {}).get("query") or {}
    found = Revisions()
    for page in query.get("pages") or []:
        if page.get("missing") or page.get("invalid"):
            found.page_missing = True
            continue
        found.page_id = int(page["pageid"]) if page.get("pageid") is not None else None
        found.categories = [str(c.get("title", "")).split(":", 1)[-1] for c in page.get("categories") or []]
        for revision in page.get("revisions") or []:
            if revision.get("texthidden") or revision.get("textmissing"):
                continue
            slot = ((revision.get("slots") or {}).get("main") or {})
            content = slot.get("content", revision.get("content"))
            if content is not None:
                found.texts[int(revision["revid"])] = valid_text(str(content))
    return found
