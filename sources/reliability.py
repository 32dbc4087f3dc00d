"""How reliable a source is, by English Wikipedia's *Perennial sources* list.

The list (``Wikipedia:Reliable sources/Perennial sources``) is a wikitext table, one row a source:
its name, ``{{WP:RSPSTATUS|gr|nc|gu|d|m}}`` (with ``b=y`` when the source is also on the spam
blacklist), ``{{WP:RSPLAST|year}}`` and ``{{WP:RSPUSES|domain|…}}``. :func:`parse_perennial`
reads the rows with mwparserfromhell; :class:`Perennial` looks a citation up by the domain of its
URL (a subdomain matches its parent) or, for a citation without one (a book), by its publisher's
or site's name.

The shipped snapshot ``data/perennial_sources.json`` holds only what is derived from the table —
name, domains, status, last-discussed year — with its attribution; ``claire sources refresh``
writes a new one from the live page through the Action API (``action=parse``, ``prop=wikitext``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from datetime import date
from importlib.resources import files
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit

import mwparserfromhell
from mwparserfromhell.nodes import Tag, Template, Wikilink

from claire.errors import ConfigError, DatasetError
from claire.sources.urls import archived, host_of, is_public_suffix

class Tier(StrEnum):
    """A source's standing on the Perennial sources list (``not listed``: the list does not name it)."""

    GENERALLY_RELIABLE = "generally reliable"
    NO_CONSENSUS = "no consensus"
    GENERALLY_UNRELIABLE = "generally unreliable"
    DEPRECATED = "deprecated"
    BLACKLISTED = "blacklisted"
    NOT_LISTED = "not listed"


TIERS: tuple[Tier, ...] = tuple(Tier)
_STATUS: dict[str, Tier] = {"gr": Tier.GENERALLY_RELIABLE, "nc": Tier.NO_CONSENSUS, "m": Tier.NO_CONSENSUS,
                            "gu": Tier.GENERALLY_UNRELIABLE, "d": Tier.DEPRECATED, "b": Tier.BLACKLISTED}
PAGE = "Wikipedia:Reliable sources/Perennial sources"
ATTRIBUTION = (f"Derived from English Wikipedia's \"{PAGE}\" (https://en.wikipedia.org/wiki/"
               "Wikipedia:Reliable_sources/Perennial_sources), by Wikipedia contributors, CC BY-SA 4.0: "
               "source names, domains, status and last-discussed year only.")
API_URL = "https://en.wikipedia.org/w/api.php"


@dataclass(frozen=True)
class ListedSource:
    """One row of the list: the source's name, domains, tier and the year it was last discussed."""

    name: str
    domains: tuple[str, ...]
    tier: Tier
    last_discussed: int | None = None


def _template(node: Template) -> str:
    return " ".join(str(node.name).split()).upper()


_DASHES = {"SND": " – ", "SPACED NDASH": " – ", "NDASH": "–", "SNDASH": " – ", "MDASH": "—", "SPND": " – "}


def _cell_text(cell: Any) -> str:
    """A name cell as it reads: links by their text, dash templates as dashes, its topic in
    parentheses kept ("Fox News (politics and science)"); notes, anchors and shortcuts left out."""
    parts = []
    for node in cell.nodes:
        if isinstance(node, Template):
            parts.append(_DASHES.get(_template(node), ""))
        elif isinstance(node, Wikilink):
            parts.append(str(node.text if node.text is not None else node.title))
        else:
            parts.append(mwparserfromhell.parse(str(node)).strip_code())
    return "".join(parts).replace("''", "")


def _row(row: Tag) -> ListedSource | None:
    cells = [node for node in row.contents.nodes if isinstance(node, Tag) and str(node.tag) in ("td", "th")]
    templates = [t for cell in cells for t in cell.contents.filter_templates(recursive=True)]
    status = next((t for t in templates if _template(t) == "WP:RSPSTATUS"), None)
    if status is None or not cells:
        return None
    code = str(status.get(1).value).strip().lower() if status.has(1) else ""
    blacklisted = status.has("b") and str(status.get("b").value).strip().lower() in ("y", "yes")
    tier = "blacklisted" if blacklisted else _STATUS.get(code)
    if tier is None:
        return None
    domains = tuple(dict.fromkeys(
        str(p.value).strip().lower().removeprefix("www.")
        for t in templates if _template(t) == "WP:RSPUSES" for p in t.params if not p.showkey and str(p.value).strip()
        and not is_public_suffix(str(p.value).strip().removeprefix("www."))))  # a bare "com" is no one site
    last = next((t for t in templates if _template(t) == "WP:RSPLAST"), None)
    year = re.search(r"\d{4}", str(last.get(1).value)) if last is not None and last.has(1) else None
    first = cells[0].contents
    name = " ".join(_cell_text(first).split()) or (row.get("id").value.strip() if row.has("id") else "")
    return ListedSource(name=name, domains=domains, tier=tier, last_discussed=int(year.group()) if year else None)


def parse_perennial(wikitext: str) -> list[ListedSource]:
    """The rows of the Perennial sources table(s) in ``wikitext``, in order."""
    code = mwparserfromhell.parse(wikitext)
    rows = code.filter_tags(recursive=True, matches=lambda node: str(node.tag) == "tr")
    found = [row for row in (_row(r) for r in rows) if row is not None]
    return found


def _name_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", re.sub(r"\(.*?\)", "", name.lower())).removeprefix("the ").strip()


@dataclass(frozen=True)
class Rating:
    """Where a source stands: its tier, the list's row it matched (None: not listed), how, and the
    other rows the list has for the same site (rated apart by path or topic)."""

    tier: Tier
    source: ListedSource | None = None
    matched: str | None = None  # the domain, path or name it matched
    others: tuple[ListedSource, ...] = ()

    def label(self) -> str:
        """The row it came from, for display beside the tier: ``BBC, last discussed 2025``."""
        if self.source is None:
            return "not listed on English Wikipedia's Perennial sources list"
        year = f", last discussed {self.source.last_discussed}" if self.source.last_discussed else ""
        others = ("; other rows for this site: " + "; ".join(f"{o.name} ({o.tier})" for o in self.others)
                  if self.others else "")
        return f"{self.source.name}{year}{others}"


PATH_HINTS: dict[str, str] = {"forbes.com/sites/": "non-staff"}
"""URL paths the list describes in words rather than in a domain: a Forbes.com page under /sites/
is a contributor's, which the list's "non-staff authored articles" row rates (this project's
reading of the row's text, not a field of the list)."""
_TOPIC_STOP = frozenset({"and", "or", "the", "of", "news", "excluding", "other", "articles", "pre", "present", "print",
                         "issue"})


def _topics(name: str) -> tuple[set[str], set[str]]:
    """The words a row's parenthesised topic names, and those it excludes ("news excluding politics")."""
    found = re.search(r"\(([^()]*)\)\s*$", name)
    if not found:
        return set(), set()
    words = re.findall(r"[a-z]+", found.group(1).lower())
    if "excluding" in words:
        cut = words.index("excluding")
        return set(words[:cut]) - _TOPIC_STOP, set(words[cut + 1:]) - _TOPIC_STOP
    return set(words) - _TOPIC_STOP, set()


class Perennial:
    """The list as a lookup by domain (and path, and topic) and by name."""

    def __init__(self, sources: Iterable[ListedSource], *, retrieved: str | None = None) -> None:
        self.sources = list(sources)
        self.retrieved = retrieved
        self.by_domain: dict[str, list[ListedSource]] = {}
        self.by_name: dict[str, ListedSource] = {}
        for source in self.sources:
            for domain in source.domains:
                host = domain.split("/", 1)[0]
                rows = self.by_domain.setdefault(host, [])
                if source not in rows:
                    rows.append(source)
            self.by_name.setdefault(_name_key(source.name), source)

    def _choose(self, host: str, url: str, rows: list[ListedSource]) -> tuple[ListedSource, str]:
        """Of a site's rows, the one its URL's path names (a listed path, a hint, a topic word in the
        path, for a site with several rows), else the list's first."""
        try:
            path = urlsplit(archived(url)).path.lower()
        except ValueError:
            path = ""
        where = host + path
        for row in rows:
            for domain in row.domains:
                if "/" in domain and where.startswith(domain.rstrip("/")):
                    return row, domain
        for prefix, words in PATH_HINTS.items():
            if where.startswith(prefix):
                hinted = next((row for row in rows if words in row.name.lower()), None)
                if hinted is not None:
                    return hinted, prefix
        segments = set(re.findall(r"[a-z]+", path)) if len(rows) > 1 else set()
        for row in rows:
            topics, _ = _topics(row.name)
            if topics & segments:
                return row, f"{host} ({', '.join(sorted(topics & segments))})"
        return rows[0], host  # the list's first row for the site is its general one

    def rate(self, *, url: str | None = None, site: str = "") -> Rating:
        """The tier of a citation: by its URL's host (a subdomain matches its parent; an archive's URL
        is rated as the page it keeps; a trailing dot or ``www.`` changes nothing), by the row its
        path or topic names where the list has several for the site, else by its site or
        publisher's name; ``not listed`` when neither is on the list."""
        host = host_of(url)
        while host:
            if host in self.by_domain:
                rows = self.by_domain[host]
                row, matched = self._choose(host, url or "", rows)
                return Rating(row.tier, row, matched, tuple(r for r in rows if r is not row))
            host = host.split(".", 1)[1] if "." in host else ""
        key = _name_key(site)
        if key and key in self.by_name:
            return Rating(self.by_name[key].tier, self.by_name[key], site)
        return Rating(Tier.NOT_LISTED)

    # -- the snapshot --------------------------------------------------------------------------
    def to_json(self) -> str:
        """The snapshot file's text: attribution, date and the rows, one a line."""
        rows = [json.dumps({"name": s.name, "domains": list(s.domains), "status": s.tier,
                            "last_discussed": s.last_discussed}, ensure_ascii=False) for s in self.sources]
        head = {"attribution": ATTRIBUTION, "retrieved": self.retrieved}
        return (json.dumps(head, ensure_ascii=False)[:-1] + ', "sources": [\n' + ",\n".join(rows) + "\n]}\n")

    @classmethod
    def load(cls, path: Path | None = None) -> "Perennial":
        """The snapshot at ``path`` (None: the shipped one); a clear error for a file that is not one."""
        target = path or Path(str(files("claire.sources") / "data" / "perennial_sources.json"))
        try:
            data: Any = json.loads(Path(target).read_text(encoding="utf-8"))
            rows = [ListedSource(name=str(r["name"]), domains=tuple(r.get("domains") or ()), tier=r["status"],
                                 last_discussed=r.get("last_discussed")) for r in data["sources"]]
        except FileNotFoundError:
            raise ConfigError(f"no Perennial sources snapshot at {target}") from None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise DatasetError(f"{target} is not a Perennial sources snapshot ({type(error).__name__})") from None
        if any(row.tier not in TIERS for row in rows):
            raise DatasetError(f"{target} is not a Perennial sources snapshot (an unknown status)")
        return cls(rows, retrieved=data.get("retrieved"))


def subpages(main: str) -> list[str]:
    """The subpages the list's page transcludes (the live list is split into a few), by title."""
    found = []
    for template in mwparserfromhell.parse(main).filter_templates(recursive=False):
        name = str(template.name).strip()
        if name.startswith(("Wikipedia:Reliable sources/Perennial sources/", "/")):
            found.append(PAGE + name if name.startswith("/") else name)
    return found


def changes(old: Perennial, new: Perennial) -> dict[str, list[str]]:
    """What a new snapshot changes: rows added, rows removed, and tier changes, by row name."""
    before = {s.name: s for s in old.sources}
    after = {s.name: s for s in new.sources}
    return {"added": sorted(set(after) - set(before)), "removed": sorted(set(before) - set(after)),
            "tier changes": sorted(f"{name}: {before[name].tier} -> {after[name].tier}" for name in set(before) & set(after)
                                   if before[name].tier != after[name].tier)}


def snapshot_from(wikitext: str, *, retrieved: str | None = None) -> Perennial:
    """A snapshot of the rows in ``wikitext`` (an error when it holds none: not the list's page)."""
    rows = parse_perennial(wikitext)
    if not rows:
        raise DatasetError("no Perennial sources rows found in the page's wikitext")
    return Perennial(rows, retrieved=retrieved or date.today().isoformat())
