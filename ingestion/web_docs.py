"""Web documents — the pages Wikipedia cites — as corpus blocks, and cited-source text checks.

A web-docs file is JSONL with one document a line: ``{"url", "title"?, "text"}``. Each document
is split into passages of about 100 words (Side's unit of verification) that become ordinary
:class:`~claire.indexes.corpus.Block` s, so a *sources index* is built, stored and searched like
any other index. Block ids hash the URL (not the title: many pages share a title), and every block
keeps its document's URL. :func:`read_source_text` checks one cited source given as a file.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import Any

from claire.errors import DatasetError
from claire.files import read_bytes, read_jsonl
from claire.indexes.corpus import CorpusLoad, block_id, blocks_from_article
from claire.domain import Block, Reference
from claire.indexes.retriever import build_index
from claire.indexes.catalog import list_indexes

PASSAGE_WORDS = 100
MAX_SOURCE_BYTES = 5_000_000
_SNIFF = 8192
EXAMPLE_INDEX = "sources-demo"


def example_sources_path() -> Path:
    """The bundled example sources (``indexes/data/web_sources.jsonl``)."""
    return Path(str(files("claire.indexes") / "data" / "web_sources.jsonl"))


def source_blocks(text: str, *, url: str | None, title: str = "", max_words: int = PASSAGE_WORDS) -> list[Block]:
    """Split one source's text into passage blocks of at most ``max_words`` words.

    Paragraphs are packed together and long ones cut at sentence ends; ``## Heading`` lines, when
    a page has them, become section titles. The title defaults to the URL. Each block cites the
    page itself (its URL and title).
    """
    title = (title or "").strip() or (url or "").strip() or "cited source"
    blocks = blocks_from_article(title, text, max_words=max_words)
    key = url or title
    cites = [Reference(url=url, title=title, kind="web")] if url else None  # a web page's passages are backed by the page
    return [block.model_copy(update={"id": block_id(key, block.section_title, block.content), "url": url,
                                     "citations": cites})
            for block in blocks]


def _problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "expected a JSON object with url, title and text"
    for key in ("url", "text"):
        if key not in record:
            return f"field '{key}' is missing"
        if not isinstance(record[key], str):
            return f"field '{key}' must be a string"
        if not record[key].strip():
            return f"field '{key}' is empty"
    if not isinstance(record.get("title", ""), (str, type(None))):
        return "field 'title' must be a string"
    return None


def read_web_docs(path: str | Path, *, skip_invalid: bool = False, max_words: int = PASSAGE_WORDS) -> CorpusLoad:
    """Read a web-docs JSONL file into passage blocks.

    A bad line raises ``DatasetError("FILE:LINE: problem")``, or with ``skip_invalid`` is counted
    and listed in the result. A URL given twice is a bad line. Blank lines are ignored.
    """
    path = Path(path)
    load = CorpusLoad(blocks=[])
    first_line: dict[str, int] = {}
    hint = "a JSONL file with one document (url, title, text) a line"
    for line in read_jsonl(path, what="web-docs", hint=hint):
        number, record, problem = line.number, line.value, line.problem
        if problem is None:
            problem = _problem(record)
            if problem is None and record["url"].strip() in first_line:
                problem = f"duplicate url '{record['url'].strip()}' (first on line {first_line[record['url'].strip()]})"
        if problem is None:
            url = record["url"].strip()
            first_line[url] = number
            load.blocks.extend(source_blocks(record["text"], url=url, title=record.get("title") or "", max_words=max_words))
        else:
            load.reject(f"{path}:{number}: {problem}", skip_invalid)
    if not load.blocks and not load.errors:
        raise DatasetError(f"{path} holds no documents; each line should be {{\"url\", \"title\", \"text\"}}")
    return load


_BLOCK_TAGS = {"p", "div", "br", "li", "tr", "section", "article", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6",
               "table", "ul", "ol", "dd", "dt", "figcaption", "header", "footer", "pre"}
_SKIPPED_TAGS = {"script", "style", "noscript", "template", "svg", "head"}
_LOOKS_HTML = re.compile(r"^\s*(?:<!doctype\s+html|<html\b|<head\b|<body\b)", re.IGNORECASE)


class _TextOfPage(HTMLParser):
    """Visible text of an HTML page: paragraphs on their own lines, scripts and styles left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(self._skipping - 1, 0)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def page_text(text: str) -> str:
    """``text`` itself, or — when it is an HTML page — its visible text in paragraphs."""
    if not _LOOKS_HTML.match(text):
        return text
    parser = _TextOfPage()
    parser.feed(text)
    parser.close()
    paragraphs = (" ".join(chunk.split()) for chunk in re.split(r"\n\s*\n", "".join(parser.parts)))
    return "\n\n".join(p for p in paragraphs if p)


def check_source_text(text: str, where: str, *, max_bytes: int = MAX_SOURCE_BYTES) -> str:
    """``text`` if it can serve as a cited source: not empty, not binary, not over ``max_bytes``."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise DatasetError(f"{where} is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:g} MB limit for a cited source "
                           "(cite.max_source_bytes); give the relevant part of the page")
    if "\x00" in text[:_SNIFF]:
        raise DatasetError(f"{where} looks binary, not text; give the source as plain text (e.g. the page saved as .txt)")
    if not text.strip():
        raise DatasetError(f"{where} is empty; give the text of the cited source")
    return text


def read_source_text(path: str | Path, *, max_bytes: int = MAX_SOURCE_BYTES) -> str:
    """The text of a cited source file (an HTML page is reduced to its visible text), with a clear
    error when it is missing, empty, binary or huge."""
    data = read_bytes(Path(path), what="source", hint="the relevant part of the page (cite.max_source_bytes)",
                      limit=max_bytes)
    if b"\x00" in data[:_SNIFF]:
        raise DatasetError(f"source file {path} looks binary, not text; give the source as plain text "
                           "(e.g. the page saved as .txt)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(f"source file {path} is not UTF-8 text; give the source as plain UTF-8 text") from None
    return check_source_text(page_text(text), f"source file {path}", max_bytes=max_bytes)


def ensure_example_sources_index(root: Path, embedder_spec: str = "minilm", name: str = EXAMPLE_INDEX) -> None:
    """Build the bundled example sources as index ``name`` under ``root`` unless it is already
    there (an unfinished one is rebuilt)."""
    existing = next((m for m in list_indexes(root) if m.name == name), None)
    if existing is not None and existing.complete:
        return
    blocks = read_web_docs(example_sources_path()).blocks
    build_index(blocks, name=name, embedder=embedder_spec, root=root, replace=existing is not None)
