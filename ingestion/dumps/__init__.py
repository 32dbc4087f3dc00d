"""Wikipedia dumps as corpus blocks: readers for the two published formats and their converters.

- ``pages`` — the page record the readers yield, why a page is skipped, and how a page's
  sections, tables and infoboxes become :class:`~claire.indexes.corpus.Block` s (ids from the
  page id and the block's position, a URL per section);
- ``wikitext`` — MediaWiki wikitext to blocks (mwparserfromhell);
- ``html`` — Wikimedia Enterprise (Parsoid) HTML to blocks (lxml);
- ``convert`` — each page through the converter for its kind;
- ``readers`` — streaming readers of the XML export (``.xml``, ``.xml.bz2``) and of Enterprise
  HTML NDJSON (``.ndjson``, ``.json.gz``, ``.tar.gz``), with errors naming file and position.

Build orchestration (process pool, batched encoding, resume, updates) is :mod:`claire.ingestion.dump_build`.
"""
