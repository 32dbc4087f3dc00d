"""A corpus run's worklist: one entry per contradiction, ranked, written where editors use it, and
scored against a key of planted contradictions.

- :func:`entries_from` folds resolved flags (:mod:`claire.resolving.flags`, which already grouped
  them by contradiction) into :class:`WorklistEntry` s: both sides (article, section, sentence,
  block, link, the tiers of their sources), the facts that reached it, the decision with its
  confidence and reasons, and which article should change;
- :func:`ranked` puts confident decisions first and *cannot tell* last;
- :func:`worklist_wikitext` writes a sortable wikitable an editor can paste on a WikiProject
  subpage, every field kept from acting as markup as the talk-page draft's are;
- :func:`score_worklist` compares a worklist with a key (:class:`PlantedPair` a line: the wrong
  block, the blocks that contradict it, the side that is right): pairs found, entries that are not
  planted, the right side chosen, and duplicate entries.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import BaseModel, Field

from claire.errors import DatasetError
from claire.files import read_jsonl
from claire.resolving.talk_page import article_link, as_link_target, as_wikitext
from claire.validation import validated_record
from claire.tasks.sides.records import DECISION_WORDS, Resolution, SideReport


# -- the key ----------------------------------------------------------------------------------------
class PlantedValues(BaseModel):
    wrong: str
    right: str


class PlantedTranslation(BaseModel):
    """A side's sentence and its translation into another edition's language (the oracle's answer)."""
    text: str
    into: str
    translation: str


class PlantedPair(BaseModel):
    """One line of a key: a block that is wrong, the blocks that contradict it, and which side is
    right (``contradicting``: the wrong block should change; ``both``: both can stand). A pair across
    language editions may give each side's sentence with its translation."""

    id: str
    wrong_block: str
    contradicting_blocks: list[str] = Field(min_length=1)
    right_side: Literal["contradicting", "both"] = "contradicting"
    values: PlantedValues | None = None  # what each side states (optional; the oracle reads it)
    what: str = ""
    translations: list[PlantedTranslation] = Field(default_factory=list)


def load_key(path: str | Path) -> list[PlantedPair]:
    """The planted pairs of a key file (JSONL); a bad line is a DatasetError naming FILE:LINE."""
    path = Path(path)
    pairs: list[PlantedPair] = []
    for line in read_jsonl(path, what="key", hint="a JSONL file with one planted pair (id, wrong_block, "
                                                  "contradicting_blocks, right_side) a line"):
        if line.problem is not None:
            raise DatasetError(f"{path}:{line.number}: {line.problem}")
        pairs.append(validated_record(PlantedPair, line.value, f"{path}:{line.number}"))
    if not pairs:
        raise DatasetError(f"{path} holds no planted pairs")
    return pairs


# -- the entries ------------------------------------------------------------------------------------
class EntryFact(BaseModel):
    """A checked fact that reached the contradiction."""

    claim_id: str
    text: str
    document_title: str = ""


class WorklistEntry(Resolution):
    """One contradiction, however many facts reached it and from whichever end: the resolve card
    (``claim_id`` is the first fact that reached it) with the entry's id, the article that should
    change, the facts, and an editor's decision."""

    id: str
    should_change: str | None = None  # the article whose statement should change (a winner was found)
    facts: list[EntryFact] = Field(default_factory=list)
    status: Literal["open", "accepted", "rejected"] = "open"
    note: str | None = None

    def blocks(self) -> list[str]:
        """The blocks of its two statements (where known)."""
        return [side.block_id for side in self.sides if side.block_id]


def _entry_id(key: str) -> str:
    return "c-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def entries_from(resolved: Sequence[Any]) -> list[WorklistEntry]:
    """One entry per contradiction from resolved flags (:class:`~claire.resolving.flags.ResolvedFlag`,
    grouped by their ``key``); flags without a case or a decision are left out."""
    entries: dict[str, WorklistEntry] = {}
    for flag in resolved:
        if flag.case is None or flag.resolution is None or flag.key is None:
            continue
        fact = EntryFact(claim_id=flag.claim.claim_id, text=flag.claim.text,
                         document_title=flag.claim.context.document_title)
        entry = entries.get(flag.key)
        if entry is None:
            resolution = flag.resolution
            winner = resolution.decision if resolution.decision in ("fact", "passage") else None
            loser = {"fact": "passage", "passage": "fact"}.get(winner or "")
            changing = resolution.side(loser) if loser else None
            entry = entries[flag.key] = WorklistEntry(
                **resolution.model_dump(), id=_entry_id(flag.key),
                should_change=changing.document_title if changing else None)
        if all(f.claim_id != fact.claim_id for f in entry.facts):
            entry.facts.append(fact)
    return list(entries.values())


_ORDER = {"fact": 0, "passage": 0, "both": 1, "unknown": 2, None: 3}


def ranked(entries: Sequence[WorklistEntry]) -> list[WorklistEntry]:
    """Confident decisions first, then *both can stand*, *cannot tell* and failures last."""
    return sorted(entries, key=lambda e: (_ORDER.get(e.decision, 3), -(e.confidence or 0.0), e.id))


# -- where editors use it ---------------------------------------------------------------------------
def _tiers(side: SideReport) -> str:
    tiers = sorted({source.tier for source in side.sources})
    return ", ".join(tiers) if tiers else "no source cited"


def _article_cell(side: SideReport, home: str) -> str:
    return article_link(side, home, True) if as_link_target(side.document_title) else "—"


def _statement_cell(side: SideReport) -> str:
    """A side's sentence, and for one of another edition the model's translation, marked as such."""
    cell = as_wikitext(side.sentence or side.text)
    if side.translation:
        cell += f" (translation by the model: {as_wikitext(side.translation)})"
    return cell


def worklist_wikitext(entries: Sequence[WorklistEntry], *, title: str = "Contradictions found by CLAIRE",
                      home: str = "en") -> str:
    """A sortable wikitable of the entries: the article, its statement, the other article, which
    side is right and the tiers of each side's sources. Every quoted field is kept from acting as
    markup, and article links carry a leading colon so that no title can act as a category or a file;
    an article of another edition than ``home`` (the wiki the table is for) is an interwiki link, and
    its statement comes with the model's translation."""
    lines = [f"== {as_wikitext(title)} ==",
             '{| class="wikitable sortable"',
             "! Article !! Statement !! Other article !! Other statement !! Which side !! Confidence !! Sources (article) !! Sources (other)"]
    for entry in entries:
        if len(entry.sides) != 2:
            continue
        fact, passage = entry.sides
        if entry.should_change and passage.document_title == entry.should_change and fact.document_title != entry.should_change:
            fact, passage = passage, fact  # the article that should change comes first
        verdict = DECISION_WORDS.get(entry.decision or "", "no decision")
        if entry.should_change:
            verdict = f"{entry.should_change} should change"
        confidence = f"{entry.confidence:.2f}" if entry.confidence is not None and entry.decision in ("fact", "passage", "both") else "—"
        lines += ["|-",
                  f"| {_article_cell(fact, home)} || {_statement_cell(fact)} || {_article_cell(passage, home)} || "
                  f"{_statement_cell(passage)} || {as_wikitext(verdict)} || {confidence} || "
                  f"{as_wikitext(_tiers(fact))} || {as_wikitext(_tiers(passage))}"]
    lines.append("|}")
    return "\n".join(lines) + "\n"


# -- measured against a key ---------------------------------------------------------------------------
def score_worklist(entries: Sequence[WorklistEntry], key: Sequence[PlantedPair]) -> dict[str, Any]:
    """Recall of the planted pairs, the share of entries that are not planted, the right side
    chosen (where the key has a winner), and duplicate entries (several entries for one pair)."""
    matched: dict[str, list[WorklistEntry]] = {pair.id: [] for pair in key}
    unplanted: list[str] = []
    for entry in entries:
        blocks = set(entry.blocks())
        pair = next((p for p in key if p.wrong_block in blocks and blocks & set(p.contradicting_blocks)), None)
        if pair is None:
            unplanted.append(entry.id)
        else:
            matched[pair.id].append(entry)
    found = [pid for pid, hits in matched.items() if hits]
    right = 0
    judged = 0
    for pair in key:
        hits = matched[pair.id]
        if not hits:
            continue
        entry = hits[0]
        wrong_side = next((s for s in entry.sides if s.block_id == pair.wrong_block), None)
        if pair.right_side == "both":
            judged += 1
            right += entry.decision == "both"
        else:
            judged += 1
            right += wrong_side is not None and entry.should_change == wrong_side.document_title
    duplicates = sum(len(hits) - 1 for hits in matched.values() if len(hits) > 1)
    return {
        "planted": len(key), "found": len(found), "recall": round(len(found) / len(key), 4) if key else None,
        "entries": len(entries), "not_planted": len(unplanted),
        "precision": round((len(entries) - len(unplanted)) / len(entries), 4) if entries else None,
        "right_side": right, "right_side_rate": round(right / judged, 4) if judged else None,
        "duplicates": duplicates, "missed": [pid for pid in matched if not matched[pid]],
        "unplanted_entries": unplanted,
    }
