"""Corpora of blocks — CLAIRE's unit of retrieval — and the converters that produce blocks.

A block (:class:`claire.domain.Block`) is one passage of one Wikipedia article: a paragraph or a
few short ones, a table or an infobox. Corpora are JSONL files with one block a line. Converters turn
other sources into blocks: WikiCollide records (the passages their agent traces retrieved) and
plain article text (split at headings, packed into passages of bounded length).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import ValidationError

from claire.domain import Block
from claire.errors import ConfigError, DatasetError
from claire.files import read_jsonl
from claire.validation import describe

# WikiCollide's name for a search step, and CLAIRE's own (its traces can be read back the same way)
SEARCH_ACTIONS = ("search_wikipedia_outside_claim_article", "search")
"""The action name of a corpus search in WikiCollide agent traces."""

_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_WIKI_HEADING = re.compile(r"^(={2,6})\s*(.+?)\s*\1\s*$")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def block_id(document_title: str, section_title: str, content: str) -> str:
    """A stable 16-hex-digit id for a passage: sha1 over title, section and content."""
    key = "\x00".join((document_title, section_title, content))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def is_table(content: str) -> bool:
    """True when ``content`` is a markdown table (a ``|`` row followed by a ``---`` rule)."""
    lines = [line.strip() for line in content.strip().splitlines()]
    return len(lines) >= 2 and lines[0].startswith("|") and bool(_TABLE_RULE.match(lines[1]))


MAX_BLOCK_CHARS = 6000
"""Blocks longer than this are split at build time (a prompt shows at most this much of one)."""


def split_oversize(block: Block, limit: int = MAX_BLOCK_CHARS) -> list[Block]:
    """``block`` itself when it fits in ``limit`` characters, else consecutive parts that do:
    text at paragraph, line, sentence and word boundaries; a table by rows, each part repeating
    the header. Parts keep the title, section, type and URL; their ids are ``ID~2``, ``ID~3``…
    after the first, which keeps the original id."""
    if len(block.content) <= limit:
        return [block]
    if block.block_type == "table" or is_table(block.content):
        lines = block.content.splitlines()
        head = lines[:2] if is_table(block.content) else lines[:1]
        room = max(limit - sum(len(line) + 1 for line in head), limit // 2)
        chunks = ["\n".join(head + rows.splitlines()) for rows in _split_to_fit("\n".join(lines[len(head):]), room)]
    else:
        chunks = _split_to_fit(block.content, limit)
    return [
        block.model_copy(update={"id": block.id if n == 1 else f"{block.id}~{n}", "content": chunk})
        for n, chunk in enumerate(chunks, start=1)
    ]


_SPLITTERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\n\s*\n"), "\n\n"), (re.compile(r"\n"), "\n"), (_SENTENCE_END, " "), (re.compile(r"\s+"), " "),
]


def _split_to_fit(text: str, limit: int, level: int = 0) -> list[str]:
    """Pieces of ``text`` of at most ``limit`` characters, cut at the coarsest boundary that works."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    if level >= len(_SPLITTERS):
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    pattern, joiner = _SPLITTERS[level]
    pieces = [p for part in pattern.split(text) for p in _split_to_fit(part, limit, level + 1)]
    packed: list[str] = []
    for piece in pieces:
        if packed and len(packed[-1]) + len(joiner) + len(piece) <= limit:
            packed[-1] = packed[-1] + joiner + piece
        else:
            packed.append(piece)
    return packed


@dataclass
class CorpusLoad:
    """The result of reading a corpus file: its valid blocks and what was skipped."""

    blocks: list[Block]
    invalid: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, message: str, skip_invalid: bool) -> None:
        """A bad line: an error, or with ``skip_invalid`` counted and listed."""
        if not skip_invalid:
            raise DatasetError(message)
        self.invalid += 1
        self.errors.append(message)


def _records(path: Path, *, what: str, hint: str) -> Iterator[tuple[int, Any, str | None]]:
    """``(line number, JSON value or None, problem)`` for every non-blank line of a JSONL file."""
    for line in read_jsonl(path, what=what, hint=hint):
        yield line.number, line.value, line.problem


def _block_from(record: Any) -> tuple[Block | None, str | None]:
    if not isinstance(record, dict):
        return None, "expected a JSON object"
    try:
        return Block.model_validate(record), None
    except ValidationError as exc:
        return None, describe(exc)


def read_corpus(path: str | Path, *, skip_invalid: bool = False) -> CorpusLoad:
    """Read a JSONL corpus. A bad line raises ``DatasetError("FILE:LINE: problem")``, or is
    counted and listed in the result when ``skip_invalid``. Blank lines are ignored."""
    path = Path(path)
    load = CorpusLoad(blocks=[])
    first_line: dict[str, int] = {}
    for number, record, problem in _records(path, what="corpus", hint="a JSONL file with one block a line"):
        block = None
        if problem is None:
            block, problem = _block_from(record)
        if block is not None and block.id in first_line:
            problem = f"duplicate id '{block.id}' (first on line {first_line[block.id]})"
        if problem is None and block is not None:
            first_line[block.id] = number
            load.blocks.append(block)
        else:
            load.reject(f"{path}:{number}: {problem}", skip_invalid)
    return load


def demo_corpus_path() -> Path:
    """The bundled demo corpus (``indexes/data/demo_corpus.jsonl``)."""
    return Path(str(files("claire.indexes") / "data" / "demo_corpus.jsonl"))


def demo_editions_path() -> Path:
    """French and German articles written for the multilingual demo (``indexes/data/demo_editions.jsonl``),
    each linked to its English counterpart in the demo corpus."""
    return Path(str(files("claire.indexes") / "data" / "demo_editions.jsonl"))


def linked_both_ways(blocks: list[Block], language: str) -> list[Block]:
    """``blocks`` of several editions, each with its language (``language`` for a block that names
    none) and its article's counterparts in every other edition: the interlanguage links any
    article gives, followed both ways (an English article that links to nothing is the counterpart
    of the French one that links to it, and so of that one's other counterparts)."""
    edition = {block.id: block.language or language for block in blocks}
    links: dict[tuple[str, str], dict[str, str]] = {}
    for block in blocks:
        own = (edition[block.id], block.document_title)
        for lang, title in (block.counterparts or {}).items():
            group = {own, (lang, title)}
            for member in list(group):
                group |= {(code, name) for code, name in links.get(member, {}).items()}
            for member in group:
                links.setdefault(member, {}).update({code: name for code, name in group if code != member[0]})
    return [block.model_copy(update={"language": edition[block.id],
                                     "counterparts": links.get((edition[block.id], block.document_title)) or None})
            for block in blocks]


# --- WikiCollide -------------------------------------------------------------------------


@dataclass
class ClaimRetrievals:
    """One WikiCollide claim with its own passage and the passages its agent trace found."""

    claim_id: str
    claim_text: str
    context: Block
    found: list[Block]


def _passage(value: Any, where: str) -> Block:
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: expected an object with document_title and content")
    for key in ("document_title", "content"):
        if not isinstance(value.get(key), str) or not value[key].strip():
            raise DatasetError(f"{where}.{key}: missing or not a non-empty string")
    title, content = value["document_title"], value["content"]
    section = value.get("section_title") or ""
    date = value.get("last_edit_date")
    return Block(
        id=block_id(title, section, content),
        document_title=title,
        section_title=section,
        content=content,
        block_type="table" if is_table(content) else "text",
        url=value.get("url") or None,
        last_edit_date=None if date is None else str(date),
    )


def wikicollide_claims(path: str | Path) -> list[ClaimRetrievals]:
    """Parse WikiCollide records (the published JSON array) into claims and their passages.
    A malformed file raises DatasetError naming the file, the record index and the field."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"WikiCollide file {path} not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read WikiCollide file {path}: {exc}") from None
    if not isinstance(records, list):
        raise DatasetError(f"{path}: expected a JSON array of WikiCollide records")
    claims = []
    for index, record in enumerate(records):
        where = f"{path}: record {index}"
        claim = record.get("claim") if isinstance(record, dict) else None
        if not isinstance(claim, dict):
            raise DatasetError(f"{where}: field 'claim' is missing or not an object")
        claim_id, text = claim.get("claim_id"), claim.get("claim_text")
        if not isinstance(claim_id, str) or not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where}: field 'claim.claim_id' or 'claim.claim_text' is missing")
        context = _passage(claim.get("claim_context_block"), f"{where}: claim.claim_context_block")
        trace = record.get("agent_trace") or []
        if not isinstance(trace, list):
            raise DatasetError(f"{where}: field 'agent_trace' is not a list")
        found: list[Block] = []
        for step_index, step in enumerate(trace):
            if not isinstance(step, dict) or step.get("action_name") not in SEARCH_ACTIONS:
                continue
            output = step.get("action_output")
            step_where = f"{where}: agent_trace[{step_index}].action_output"
            if not isinstance(output, list):
                raise DatasetError(f"{step_where}: expected a list of passages")
            found.extend(_passage(p, f"{step_where}[{i}]") for i, p in enumerate(output))
        claims.append(ClaimRetrievals(claim_id, text, context, found))
    return claims


def blocks_from_wikicollide(path: str | Path) -> list[Block]:
    """The distinct blocks of a WikiCollide file: every passage its agent traces retrieved plus
    each claim's own context block, de-duplicated by (title, section, content), in file order."""
    unique: dict[str, Block] = {}
    for claim in wikicollide_claims(path):
        for block in (claim.context, *claim.found):
            unique.setdefault(block.id, block)
    return list(unique.values())


# --- plain article text ------------------------------------------------------------------


def heading(line: str) -> tuple[int, str] | None:
    """The level and title of a heading line (``## History`` or ``== History ==``), else None:
    plain article text marks its sections this way, and a heading is never read as text."""
    match = _MD_HEADING.match(line.strip()) or _WIKI_HEADING.match(line.strip())
    return (len(match.group(1)), match.group(2)) if match else None


def article_sections(text: str, title: str = "") -> list[tuple[list[str], str]]:
    """The parts of an article's plain text that its heading lines divide it into, in order: each
    part's heading path (nested headings give ``["Career", "Later years"]``; a top-level heading that
    repeats the article's ``title`` is no section) and the text under it, never a heading line.
    Parts with nothing but blank lines are left out. The one heading walker: indexing
    (:func:`blocks_from_article`) and fact extraction both cut articles by it."""
    parts: list[tuple[list[str], str]] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []

    def end_part() -> None:
        if any(line.strip() for line in lines):
            parts.append(([name for _, name in path], "\n".join(lines)))
        lines.clear()

    for line in text.splitlines():
        found = heading(line)
        if found is None:
            lines.append(line)
            continue
        end_part()
        level, name = found
        while path and path[-1][0] >= level:
            path.pop()
        if not (level == 1 and name == title):
            path.append(found)
    end_part()
    return parts


def split_sentences(text: str) -> list[str]:
    """A paragraph's sentences (split after ``.!?`` and any closing quote or bracket, before a
    capital, a digit or an opening quote)."""
    return [part.strip() for part in _SENTENCE_END.split(" ".join(text.split())) if part.strip()]


def _pieces(paragraph: str, max_words: int) -> list[str]:
    """Split a paragraph into pieces of at most ``max_words`` words, at sentence ends (and
    inside a sentence only when the sentence alone is too long)."""
    if len(paragraph.split()) <= max_words:
        return [paragraph]
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        words = sentence.split()
        sentences.extend(" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words))
    return _pack(sentences, max_words, " ")


def _pack(pieces: list[str], max_words: int, separator: str) -> list[str]:
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        words = len(piece.split())
        if current and size + words > max_words:
            passages.append(separator.join(current))
            current, size = [], 0
        current.append(piece)
        size += words
    if current:
        passages.append(separator.join(current))
    return passages


def pack_paragraphs(paragraphs: list[str], max_words: int = 150) -> list[str]:
    """Pack paragraphs into passages of at most ``max_words`` words (one paragraph a line), long
    paragraphs split at sentence ends — the packing :func:`blocks_from_article` uses."""
    pieces = [piece for p in paragraphs for piece in _pieces(p, max_words)]
    return _pack(pieces, max_words, "\n")


def blocks_from_article(title: str, text: str, *, url: str | None = None, max_words: int = 150) -> list[Block]:
    """Split plain article text into blocks.

    Lines like ``## History`` or ``== History ==`` start sections (nested headings give section
    paths such as ``Career > Later years``); paragraphs (separated by blank lines) are packed into
    passages of at most ``max_words`` words, long paragraphs split at sentence ends; a markdown
    table is kept whole as one ``table`` block whatever its length.
    """
    if not title.strip():
        raise DatasetError("article title is empty")
    if max_words < 1:
        raise ConfigError(f"max_words must be at least 1 (got {max_words})")
    blocks: dict[str, Block] = {}
    paragraphs: list[str] = []
    lines: list[str] = []
    table: list[str] = []
    name = ""

    def add(content: str, kind: Literal["text", "table"]) -> None:
        anchor = url
        if url and name and "#" not in url:
            anchor = f"{url}#{name.rsplit(' > ', 1)[-1].replace(' ', '_')}"
        bid = block_id(title, name, content)
        blocks.setdefault(
            bid, Block(id=bid, document_title=title, section_title=name, content=content, block_type=kind, url=anchor)
        )

    def end_paragraph() -> None:
        if lines:
            paragraphs.append(" ".join(lines))
            lines.clear()

    def end_passages() -> None:
        end_paragraph()
        pieces = [piece for p in paragraphs for piece in _pieces(p, max_words)]
        for passage in _pack(pieces, max_words, "\n"):
            add(passage, "text")
        paragraphs.clear()

    def end_table() -> None:
        if table:
            content = "\n".join(table)
            add(content, "table" if is_table(content) else "text")
            table.clear()

    for names, part in article_sections(text, title):
        name = " > ".join(names)
        for raw in part.splitlines():
            line = raw.strip()
            if line.startswith("|"):
                end_passages()
                table.append(line)
                continue
            end_table()
            if line:
                lines.append(line)
            else:
                end_paragraph()
        end_table()
        end_passages()
    return list(blocks.values())
