"""Fact extraction: a passage (title, section, text) -> atomic, self-contained facts.

Headings (``## Landmarks``, ``== Overview ==``) divide a text into sections: a heading is the
section title of the text under it, never text to extract from. Long texts are split into blocks
by paragraph (bounded length) and extracted concurrently; facts are read leniently from
``<fact>`` tags (or list lines when a model drops the tags) and de-duplicated. Each fact keeps
the block it came from, which becomes its context when checked, its section, and the sentence of
the passage the model says it restates (``<source>``), which is where it is shown in the text.
"""

from __future__ import annotations

import asyncio
import html
import re
from dataclasses import dataclass
from typing import Any

from claire.indexes.corpus import article_sections
from claire.llm.answers import text_of
from claire.llm.client import ChatClient, parsed_of
from claire.languages import name_of
from claire.errors import ClaireError, ConfigError, NothingToCheck
from claire.prompts import PromptLibrary
from claire.tasks.fact_limits import fact_length_problem

MAX_PASSAGE_BYTES = 1_000_000
"""The largest passage ``extract`` and ``scan`` take (UTF-8 bytes): far more than any Wikipedia
article's text, and a bound on how many LLM calls one command can make."""

_FACT = re.compile(r"<\s*fact\s*>(.*?)(?:<\s*/\s*fact\s*>|$)", re.IGNORECASE | re.DOTALL | re.MULTILINE)
_SOURCE = re.compile(r"\s*<\s*source\s*>(.*?)(?:<\s*/\s*source\s*>|$)", re.IGNORECASE | re.DOTALL | re.MULTILINE)
_REASONING = re.compile(r"<\s*reasoning\s*>.*?(?:<\s*/\s*reasoning\s*>|(?=<\s*facts\s*>)|$)", re.IGNORECASE | re.DOTALL)
_FACTS_BLOCK = re.compile(r"<\s*facts\s*>(.*?)(?:<\s*/\s*facts\s*>|$)", re.IGNORECASE | re.DOTALL)
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class ExtractedFact:
    """One fact, the paragraph block it was extracted from, its section and its source sentence."""

    text: str
    block: str  # the paragraph block it was extracted from
    section: str = ""  # the heading it stands under (else the section given with the text)
    source: str | None = None  # the sentence of the text it restates, as the model copied it


def split_blocks(text: str, max_words: int = 180) -> list[str]:
    """Paragraph blocks of at most ``max_words`` words (long paragraphs split at sentences)."""
    blocks: list[str] = []
    current: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if current:
            blocks.append(" ".join(current))
        current, size = [], 0

    for paragraph in re.split(r"\n\s*\n", text.strip()):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        pieces = [paragraph] if len(paragraph.split()) <= max_words else _SENTENCE_END.split(paragraph)
        for piece in pieces:
            words = len(piece.split())
            if current and size + words > max_words:
                flush()
            current.append(piece)
            size += words
        if size >= max_words // 2:
            flush()
    flush()
    return blocks


def _normalise(fact: str) -> str:
    return re.sub(r"[\W_]+", " ", fact.casefold()).strip()


def _clean(text: str) -> str:
    return " ".join(text.strip().strip('"“”').split())


def parse_sourced_facts(text: str) -> list[tuple[str, str | None]]:
    """``(fact, source sentence or None)`` from a model answer: ``<fact>`` tags, each optionally
    followed by a ``<source>`` tag, else list lines (no sources); cleaned, no duplicates. The
    paper's reasoning block (``<reasoning>``) is never read for facts, and when the answer has a
    ``<facts>`` block, only that block is."""
    text = _REASONING.sub(" ", html.unescape(text or ""))
    block = _FACTS_BLOCK.search(text)
    if block is not None:
        text = block.group(1)
    found: list[tuple[str, str | None]] = []
    for match in _FACT.finditer(text):
        fact, *rest = _SOURCE.split(match.group(1), maxsplit=1)  # an unclosed fact runs into its source
        source = rest[0] if rest else None
        following = _SOURCE.match(text, match.end())
        if following is not None:
            source = following.group(1)
        found.append((fact, _clean(source) or None if source else None))
    if not found:
        found = [(m.strip(), None) for m in _LIST_LINE.findall(text)]
    facts: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for fact, source in found:
        fact = _clean(fact)
        key = _normalise(fact)
        if len(key.split()) < 3 or key in seen:  # too short to be a checkable statement
            continue
        seen.add(key)
        facts.append((fact, source))
    return facts


async def extract_facts(
    *, title: str, section: str = "", text: str, llm: ChatClient, prompts: PromptLibrary, max_words: int = 180,
    language: str | None = None,
) -> list[ExtractedFact]:
    """All facts of a passage, in text order, de-duplicated across blocks."""
    if not text or not text.strip():
        raise ConfigError("the text is empty: give the passage to extract facts from (--text or --file)")
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_PASSAGE_BYTES:
        raise ConfigError(f"the passage is {size / 1e6:.1f} MB, over the {MAX_PASSAGE_BYTES / 1e6:g} MB limit for one "
                          "extraction; give one article (or one section) at a time")
    if not title.strip():
        raise ConfigError("the article title is needed (--title): facts are checked against the rest of the corpus")
    blocks = [(names[-1] if names else section, block) for names, part in article_sections(text, title)
              for block in split_blocks(part, max_words=max_words)]
    if not blocks:
        raise ConfigError("the text has only headings: give the passage under them to extract facts from")
    answers = await asyncio.gather(
        *(llm.ainvoke(prompts.render("fact_extraction", title=title, section=name, text=block,
                                     language=name_of(language) if language else "")) for name, block in blocks)
    )
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for (name, block), answer in zip(blocks, answers):
        typed = parsed_of(answer)
        found = ([(" ".join(item.fact.split()), " ".join(item.source.split()) or None) for item in typed.facts
                  if item.fact.strip()] if typed is not None
                 else parse_sourced_facts(text_of(answer)))
        for fact, source in found:
            key = _normalise(fact)
            if key not in seen:
                seen.add(key)
                facts.append(ExtractedFact(text=fact, block=block, section=name, source=source))
    return facts


async def block_facts(block: Any, *, llm: ChatClient, prompts: PromptLibrary, max_fact_chars: int) -> dict[str, Any]:
    """The facts of one indexed text block as a record a resumable run keeps (the corpus run's
    ``facts.jsonl``): the block's id, its facts (those longer than ``max_fact_chars`` left out) and
    the error that stopped the extraction, if any (a block with no checkable fact has none)."""
    try:
        found = await extract_facts(title=block.document_title, section=block.section_title, text=block.content,
                                    llm=llm, prompts=prompts, language=block.language)
    except NothingToCheck:
        found = []
    except ClaireError as error:
        return {"block_id": block.id, "error": str(error), "facts": []}
    return {"block_id": block.id, "error": None,
            "facts": [f.text for f in found
                      if not (fact_length_problem(f.text, max_fact_chars, what="a fact") or [None, False])[1]]}
