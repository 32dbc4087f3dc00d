"""Fact extraction: a passage (title, section, text) -> atomic, self-contained facts.

Long texts are split into blocks by paragraph (bounded length) and extracted concurrently;
facts are read leniently from ``<fact>`` tags (or list lines when a model drops the tags) and
de-duplicated. Each fact keeps the block it came from, which becomes its context when checked.
"""

from __future__ import annotations

import asyncio
import html
import re
from dataclasses import dataclass

from claire.llm.answers import text_of
from claire.llm.client import ChatClient
from claire.errors import ConfigError
from claire.prompts import PromptLibrary

MAX_PASSAGE_BYTES = 1_000_000
"""The largest passage ``extract`` and ``scan`` take (UTF-8 bytes): far more than any Wikipedia
article's text, and a bound on how many LLM calls one command can make."""

_FACT = re.compile(r"<\s*fact\s*>(.*?)(?:<\s*/\s*fact\s*>|$)", re.IGNORECASE | re.DOTALL | re.MULTILINE)
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class ExtractedFact:
    """One fact and the paragraph block it was extracted from."""

    text: str
    block: str  # the paragraph block it was extracted from


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


def parse_facts(text: str) -> list[str]:
    """Facts from a model answer: ``<fact>`` tags, else list lines; cleaned, no duplicates."""
    text = html.unescape(text or "")
    found = [m.strip() for m in _FACT.findall(text)]
    if not found:
        found = [m.strip() for m in _LIST_LINE.findall(text)]
    facts: list[str] = []
    seen: set[str] = set()
    for fact in found:
        fact = " ".join(fact.strip().strip('"“”').split())
        key = _normalise(fact)
        if len(key.split()) < 3 or key in seen:  # too short to be a checkable statement
            continue
        seen.add(key)
        facts.append(fact)
    return facts


async def extract_facts(
    *, title: str, section: str = "", text: str, llm: ChatClient, prompts: PromptLibrary, max_words: int = 180
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
    blocks = split_blocks(text, max_words=max_words)
    answers = await asyncio.gather(
        *(llm.ainvoke(prompts.render("fact_extraction", title=title, section=section, text=block)) for block in blocks)
    )
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for block, answer in zip(blocks, answers):
        for fact in parse_facts(text_of(answer)):
            key = _normalise(fact)
            if key not in seen:
                seen.add(key)
                facts.append(ExtractedFact(text=fact, block=block))
    return facts
