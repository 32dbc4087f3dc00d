"""What an edit changed, in the text a reader sees: a diff of the parsed revisions, not of their markup.

Both revisions are converted to blocks as a dump would be (:mod:`claire.ingestion.dumps.wikitext`:
references, templates and markup gone; sections, tables and infoboxes kept), each block is cut
into units — sentences of prose, rows of tables, lines of infoboxes — and a unit of the new
revision counts as written by the edit when the old revision has no unit with the same words (a
set look-up, so one edit costs time linear in its length; a unit that only moved is not new).
Units the new revision added or changed are grouped by the block they now stand in: each group is a :class:`ChangedPassage`, whose text is what the edit wrote and whose
block is the context the facts extracted from it are checked in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from claire.indexes.corpus import split_sentences
from claire.domain import Block
from claire.ingestion.dumps.convert import convert_page
from claire.ingestion.dumps.pages import DumpPage, PageResult

MIN_WORDS = 4  # shorter units (a lone date, a heading-like fragment) carry no checkable fact


@dataclass
class ChangedPassage:
    """The units an edit added or changed within one block of the new revision."""

    section: str
    text: str  # the added or changed units, in order
    block: Block  # the block they stand in (the context of their facts)


def units(block: Block) -> list[str]:
    """A block's units: sentences of prose, rows of a table, lines of an infobox."""
    if block.block_type in ("table", "infobox"):
        return [line.strip() for line in block.content.splitlines() if line.strip() and not line.startswith("| ---")]
    return split_sentences(block.content)


def _normal(unit: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", unit.casefold()).split())


def page_blocks(page_id: int, revision_id: int, title: str, wikitext: str, *, url: str | None = None) -> PageResult:
    """One revision's blocks, converted as a dump page of the main namespace."""
    return convert_page(DumpPage(page_id=page_id, revision_id=revision_id, title=title, namespace=0, body=wikitext,
                                 kind="wikitext", url=url))


def changed_passages(old: PageResult | None, new: PageResult) -> list[ChangedPassage]:
    """The passages of ``new`` that ``old`` did not have (all of ``new`` for a page creation)."""
    seen_old = {_normal(unit) for block in (old.blocks if old else []) for unit in units(block)}
    passages: list[ChangedPassage] = []
    for block in new.blocks:
        for unit in units(block):
            key = _normal(unit)
            if len(key.split()) < MIN_WORDS or key in seen_old:  # too short to check, or kept (perhaps moved)
                continue
            if passages and passages[-1].block.id == block.id:
                passages[-1].text += " " + unit if block.block_type == "text" else "\n" + unit
            else:
                passages.append(ChangedPassage(section=block.section_title, text=unit, block=block))
    return passages
