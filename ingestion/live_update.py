"""Keeping an index current with single edits: a few pages' new revisions stored the way
``claire index update`` stores a newer dump's.

An index built from a dump has a ledger of the pages it holds (:class:`~claire.ingestion.dump_build.Ledger`).
:func:`update_pages` runs the same ingestion over the given pages only: block ids ``{page_id}-{n}``,
so a page's new blocks overwrite its old ones (surplus ones deleted), an unchanged revision is
skipped, and an embedded index publishes the change as a new version, so readers never see it
half done. Nothing is removed for pages it was not given. An index not built from a dump has no
ledger: it cannot take edits (:func:`can_take_edits` says so before anything starts).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from claire.errors import RetrievalError
from claire.ingestion.dumps.pages import DumpPage
from claire.ingestion.dump_build import IngestOptions, IngestSummary, Ledger, ingest_pages, ledger_path, open_ingest_store


@dataclass
class PageBatch:
    """Pages to store, shaped as a dump reader (the ingestion reads pages and progress from it)."""

    pages: list[DumpPage] = field(default_factory=list)
    total_bytes: int | None = None
    bytes_read: int = 0

    def __iter__(self) -> Iterator[DumpPage]:
        return iter(self.pages)


def can_take_edits(name: str, root: Path, url: str | None = None) -> bool:
    """Whether index ``name`` was built from a dump (it has a ledger of its pages)."""
    return ledger_path(root, name, url).is_file()


def update_pages(pages: list[DumpPage], *, name: str, root: Path, url: str | None = None, api_key: str | None = None,
                 options: IngestOptions | None = None) -> IngestSummary:
    """Store ``pages`` (new revisions of edited articles) in index ``name`` and publish it."""
    options = options or IngestOptions(show_progress=False)
    ledger_file = ledger_path(root, name, url)
    if not ledger_file.is_file():
        raise RetrievalError(f"index {name} was not built from a dump, so single edits cannot be stored in it")
    store = open_ingest_store(name, root, url, api_key, options)
    summary = IngestSummary(name=name, mode="update")
    try:
        if not store.exists:
            raise RetrievalError(f"no index named {name} in {url or root}")
        with closing(Ledger(ledger_file)) as ledger:
            if ledger.get("phase") != "built":
                raise RetrievalError(f"index {name} is being built or updated from a dump; edits wait until that ends")
            generation = int(ledger.get("generation", "1") or 1)
            ingest_pages(PageBatch(list(pages)), store, ledger, options, summary, generation=generation,
                         remove_missing=False, label=f"storing {len(pages)} edited page(s) in {name}")
    finally:
        store.close()
    return summary
