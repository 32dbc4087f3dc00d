"""Converting dump pages to corpus blocks with the converter for each page's kind: wikitext
(``wikitext``) or Enterprise HTML (``html``). A chunk of pages is the unit of work of a parsing
process."""

from __future__ import annotations

from claire.ingestion.dumps import html, wikitext
from claire.ingestion.dumps.pages import MAX_WORDS, DumpPage, PageResult


def convert_page(page: DumpPage, max_words: int = MAX_WORDS) -> PageResult:
    """Convert one page with the converter for its kind."""
    if page.kind == "html":
        return html.convert(page, max_words=max_words)
    return wikitext.convert(page, max_words=max_words)


def convert_pages(pages: list[DumpPage], max_words: int = MAX_WORDS) -> list[PageResult]:
    """Convert a chunk of pages (the unit of work of a parsing process)."""
    return [convert_page(page, max_words) for page in pages]
