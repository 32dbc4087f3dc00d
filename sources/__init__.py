"""Sources: the pages Wikipedia cites, read and rated.

- ``reading`` — a cited page's main text, title, site and publication date, from a local
  sources file, the on-disk cache (kept with the date fetched) or a guarded fetch over HTTP
  (private and loopback addresses refused unless allowed; size, time and redirect limits;
  trafilatura for the main text). A page that cannot be read is an answer that says why
  ("could not read: …"), never an exception;
- ``reliability`` — where a source stands on English Wikipedia's *Perennial sources* list
  (generally reliable, no consensus, generally unreliable, deprecated, blacklisted, or not
  listed): the list parsed from its wikitext with mwparserfromhell, the shipped snapshot
  (``data/perennial_sources.json``, derived from the page, CC BY-SA 4.0) and its refresh through
  the MediaWiki Action API.

May import ``domain``, ``config``, ``errors``, ``files``, ``indexes`` (its shipped data) and ``ingestion``; imported by ``agent``
(the resolver) and ``cli``.
"""
