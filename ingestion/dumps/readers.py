"""Streaming readers of Wikipedia dumps: pages one at a time, in constant memory.

- MediaWiki XML export (``*.xml``, ``*.xml.bz2``): ``lxml.etree.iterparse`` over the
  (decompressed) stream; each ``<page>`` is turned into a :class:`DumpPage` and then cleared, so
  memory does not grow with the dump. The site's ``<base>`` gives article URLs.
- Wikimedia Enterprise HTML (``*.ndjson``, ``*.json.gz``, ``*.tar.gz`` of NDJSON files): one
  article JSON object per line (``name``, ``identifier``, ``version.identifier``, ``url``,
  ``namespace.identifier``, ``article_body.html``).

Broken input — a truncated compressed file, malformed XML, a bad NDJSON line — raises one
:class:`~claire.errors.DatasetError` naming the file and the position (line, byte, last page).
Readers expose ``bytes_read``/``total_bytes`` (of the file on disk) for progress and ETA.
"""

from __future__ import annotations

import bz2
import gzip
import json
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from lxml import etree

from claire.errors import DatasetError
from claire.ingestion.dumps.pages import DumpPage, article_url

XML_SUFFIXES = (".xml", ".xml.bz2")
HTML_SUFFIXES = (".ndjson", ".jsonl", ".json.gz", ".ndjson.gz", ".tar.gz", ".tgz")


def dump_format(path: Path) -> str:
    """``xml`` or ``html`` from the file name; anything else is a DatasetError."""
    name = path.name.lower()
    if name.endswith(XML_SUFFIXES):
        return "xml"
    if name.endswith(HTML_SUFFIXES):
        return "html"
    raise DatasetError(
        f"{path}: not a dump format CLAIRE reads; use a MediaWiki XML export ({', '.join(XML_SUFFIXES)}) "
        f"or a Wikimedia Enterprise HTML dump ({', '.join(HTML_SUFFIXES)})"
    )


class DumpReader:
    """Iterate the pages of a dump file; ``bytes_read`` tells how far into the file it is."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.format = dump_format(self.path)
        if not self.path.is_file():
            raise DatasetError(f"dump file {self.path} not found")
        self.total_bytes = self.path.stat().st_size
        self._raw: IO[bytes] | None = None
        self.pages_read = 0
        self.last_title: str | None = None

    @property
    def bytes_read(self) -> int:
        """Bytes of the dump file read so far."""
        raw = self._raw
        try:
            return raw.tell() if raw is not None and not raw.closed else self.total_bytes
        except (OSError, ValueError):
            return 0

    def __iter__(self) -> Iterator[DumpPage]:
        with open(self.path, "rb") as raw:
            self._raw = raw
            pages = self._xml(raw) if self.format == "xml" else self._html(raw)
            for page in pages:
                self.pages_read += 1
                self.last_title = page.title
                yield page

    def _after(self) -> str:
        if self.last_title is None:
            return "before the first page"
        return f"after page {self.pages_read} ({self.last_title!r})"

    def _stream_error(self, exc: BaseException, what: str) -> DatasetError:
        return DatasetError(
            f"{self.path}: {what} at byte {self.bytes_read:,} of {self.total_bytes:,}, {self._after()}: "
            f"{' '.join(str(exc).split()) or type(exc).__name__}; the file is probably truncated or damaged "
            "(download it again; pages read so far are kept and the build resumes after the fix)"
        )

    # --- MediaWiki XML ---------------------------------------------------------------------

    def _xml(self, raw: IO[bytes]) -> Iterator[DumpPage]:
        compressed = self.path.name.lower().endswith(".bz2")
        stream: IO[bytes] = bz2.BZ2File(raw) if compressed else raw
        base: str | None = None
        language: str | None = None
        events = etree.iterparse(stream, events=("end",), tag=("{*}page", "{*}base", "{*}dbname"), huge_tree=True,
                                 remove_comments=True)
        try:
            for _, element in events:
                if etree.QName(element).localname == "base":
                    base = _wiki_prefix(element.text or "")
                    continue
                if etree.QName(element).localname == "dbname":
                    language = edition_of_database(element.text or "")
                    continue
                page = self._xml_page(element, base)
                if page is not None:
                    page.language = language
                element.clear(keep_tail=True)
                parent = element.getparent()
                while parent is not None and element.getprevious() is not None:
                    del parent[0]
                if page is not None:
                    yield page
        except etree.XMLSyntaxError as exc:
            line, column = exc.position if exc.position else (exc.lineno, 0)
            if compressed and "Premature end" in str(exc):
                raise self._stream_error(exc, "the XML ends early") from None
            raise DatasetError(
                f"{self.path}: malformed XML at line {line}, column {column}, {self._after()}: {exc.msg}"
            ) from None
        except (EOFError, OSError, zlib.error) as exc:
            raise self._stream_error(exc, "the compressed stream is cut off or corrupt") from None

    def _xml_page(self, element: Any, base: str | None) -> DumpPage | None:
        def child(parent: Any, name: str) -> Any:
            return next((c for c in parent if isinstance(c.tag, str) and etree.QName(c).localname == name), None)

        title_el, id_el, ns_el = child(element, "title"), child(element, "id"), child(element, "ns")
        revisions = [c for c in element if isinstance(c.tag, str) and etree.QName(c).localname == "revision"]
        where = f"{self.path}: page {self.pages_read + 1} (line {element.sourceline})"
        if title_el is None or id_el is None or not revisions:
            raise DatasetError(f"{where}: a <page> needs <title>, <id> and a <revision>")
        revision = revisions[-1]
        rev_id, text_el, stamp = child(revision, "id"), child(revision, "text"), child(revision, "timestamp")
        try:
            page_id = int(id_el.text)
            revision_id = int(rev_id.text) if rev_id is not None else 0
            namespace = int(ns_el.text) if ns_el is not None else 0
        except (TypeError, ValueError):
            raise DatasetError(f"{where}: page, revision and namespace ids must be integers") from None
        title = (title_el.text or "").strip()
        if not title:
            raise DatasetError(f"{where}: the page title is empty")
        return DumpPage(
            page_id=page_id,
            revision_id=revision_id,
            title=title,
            namespace=namespace,
            body=(text_el.text or "") if text_el is not None else "",
            kind="wikitext",
            url=article_url(base, title),
            timestamp=stamp.text.strip() if stamp is not None and stamp.text else None,
            redirect=child(element, "redirect") is not None,
        )

    # --- Enterprise HTML NDJSON ----------------------------------------------------------------

    def _html(self, raw: IO[bytes]) -> Iterator[DumpPage]:
        name = self.path.name.lower()
        try:
            if name.endswith((".tar.gz", ".tgz")):
                with tarfile.open(fileobj=raw, mode="r|gz") as archive:
                    for member in archive:
                        if member.isfile() and member.name.lower().endswith((".ndjson", ".jsonl", ".json")):
                            stream = archive.extractfile(member)
                            if stream is not None:
                                yield from self._lines(stream, f"{self.path}[{member.name}]")
            elif name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw) as stream:
                    yield from self._lines(stream, str(self.path))
            else:
                yield from self._lines(raw, str(self.path))
        except (EOFError, OSError, zlib.error, tarfile.TarError) as exc:
            raise self._stream_error(exc, "the compressed stream is cut off or corrupt") from None

    def _lines(self, stream: IO[bytes], where: str) -> Iterator[DumpPage]:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DatasetError(f"{where}:{number}: invalid JSON ({getattr(exc, 'msg', exc)}), {self._after()}") from None
            yield _html_page(record, f"{where}:{number}")


def edition_of_database(dbname: str) -> str | None:
    """The language of a Wikipedia's database name (``dewiki`` → ``de``, ``zh_yuewiki`` → ``zh-yue``);
    None for another project's."""
    name = dbname.strip()
    if not name.endswith("wiki") or name in ("commonswiki", "metawiki", "specieswiki", "wikidatawiki", "mediawikiwiki"):
        return None
    return name.removesuffix("wiki").replace("_", "-") or None


def _wiki_prefix(main_page_url: str) -> str | None:
    """``https://en.wikipedia.org/wiki/`` from the site's main-page URL in ``<siteinfo><base>``."""
    url = main_page_url.strip()
    if "/wiki/" in url:
        return url[: url.index("/wiki/") + len("/wiki/")]
    return None


def _html_page(record: Any, where: str) -> DumpPage:
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: expected a JSON object (one article per line)")

    def integer(value: Any, field: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DatasetError(f"{where}: field '{field}' is missing or not an integer")
        return value

    title = record.get("name")
    if not isinstance(title, str) or not title.strip():
        raise DatasetError(f"{where}: field 'name' is missing or empty")
    version = record.get("version") if isinstance(record.get("version"), dict) else {}
    namespace = record.get("namespace") if isinstance(record.get("namespace"), dict) else {}
    body = record.get("article_body") if isinstance(record.get("article_body"), dict) else {}
    html = body.get("html")
    if html is not None and not isinstance(html, str):
        raise DatasetError(f"{where}: field 'article_body.html' is not a string")
    url = record.get("url")
    return DumpPage(
        page_id=integer(record.get("identifier"), "identifier"),
        revision_id=integer(version.get("identifier"), "version.identifier"),
        title=title.strip(),
        namespace=integer(namespace.get("identifier", 0), "namespace.identifier"),
        body=html or "",
        kind="html",
        url=url if isinstance(url, str) and url else None,
        timestamp=record.get("date_modified") if isinstance(record.get("date_modified"), str) else None,
        categories=[str(c["name"]).split(":", 1)[-1] for c in record.get("categories") or []
                    if isinstance(c, dict) and isinstance(c.get("name"), str)] or None,
        language=language.get("identifier") if isinstance(language := record.get("in_language"), dict)
        and isinstance(language.get("identifier"), str) else None,
    )


def iter_pages(path: str | Path) -> Iterator[DumpPage]:
    """The pages of the dump at ``path``, in file order."""
    return iter(DumpReader(path))
