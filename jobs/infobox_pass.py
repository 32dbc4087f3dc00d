"""The corpus run's first stage across editions: each article's infobox set against its
counterparts' (:mod:`claire.resolving.infoboxes`), with no LLM call.

For every article of the run with an infobox, and every counterpart in the editions searched
(``retrieval.language`` and ``retrieval.languages``) that the index holds with an infobox, the two
infoboxes are aligned and compared once (a pair of articles is compared once, whichever end the
run reached first). What it gives the run:

- every comparison, written to ``infoboxes.jsonl``;
- each clear mismatch as a contradiction ready to resolve (a :class:`SidesCase` whose values the
  infoboxes named, ``values_from="infobox"``), so it joins the flags of the text in one worklist
  entry when both dispute the same figures;
- each row left to the model as a fact to check (the article's own row, in its infobox block), so
  the research and the verifier judge it like any other statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from claire.domain import Claim
from claire.jobs.scan import block_fact
from claire.languages import edition_of, edition_title
from claire.resolving.infoboxes import (
    Encode,
    InfoboxComparison,
    InfoboxRow,
    compare_infoboxes,
)
from claire.tasks.sides.records import Side, SidesCase


@dataclass
class InfoboxPass:
    """What the pass found: the comparisons, the mismatches as cases (with the fact each starts
    from) and the rows left to the model as facts."""

    comparisons: list[InfoboxComparison] = field(default_factory=list)
    cases: list[tuple[Claim, SidesCase]] = field(default_factory=list)
    to_check: list[Claim] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        rows = [row for comparison in self.comparisons for row in comparison.rows]
        verdicts = [row.verdict for row in rows]
        return {"pairs": len(self.comparisons), "rows": len(rows), "same": verdicts.count("same"),
                "differs": verdicts.count("differs"), "to the model": verdicts.count("to the model")}


def _infobox(retriever: Any, title: str, edition: str, home: str) -> Any | None:
    if not retriever.has_document(title):
        return None
    return next((b for b in retriever.document(title)
                 if b.block_type == "infobox" and edition_of(b, home) == edition and b.content.strip()), None)


def _side(block: Any, name: str, value: str) -> Side:
    return Side(text=f"{name}: {value}", document_title=block.document_title, section_title=block.section_title,
                content=block.content, citations=list(block.citations or []), url=block.url,
                revision_id=block.revision_id, block_id=block.id, sentence=f"{name}: {value}", language=block.language)


def _case(claim: Claim, block: Any, other: Any, row: InfoboxRow) -> SidesCase:
    return SidesCase(id=claim.claim_id, fact=_side(block, row.field, row.value),
                     passage=_side(other, row.other_field, row.other_value), values=row.disputed, values_from="infobox")


def infobox_pass(retriever: Any, articles: Sequence[str], *, home: str, editions: Sequence[str],
                 encode: Encode) -> InfoboxPass:
    """The pass over the run's articles (named as the run names them: ``de:Saturn V`` or a title of
    edition ``home``); see the module docstring."""
    found = InfoboxPass()
    done: set[frozenset[tuple[str, str]]] = set()
    searched = list(dict.fromkeys([home, *editions]))
    for article in articles:
        edition, title = edition_title(article, home)
        block = _infobox(retriever, title, edition, home)
        if block is None:
            continue
        for other_edition, other_title in sorted((block.counterparts or {}).items()):
            pair = frozenset({(edition, title), (other_edition, other_title)})
            if other_edition not in searched or other_edition == edition or pair in done:
                continue
            done.add(pair)
            other = _infobox(retriever, other_title, other_edition, home)
            if other is None:
                continue
            comparison = compare_infoboxes(block, other, language=edition, other_language=other_edition, encode=encode)
            found.comparisons.append(comparison)
            for row in comparison.rows:
                claim = block_fact(block, f"{row.field}: {row.value}")
                if row.verdict == "differs":
                    found.cases.append((claim, _case(claim, block, other, row)))
                elif row.verdict == "to the model":
                    found.to_check.append(claim)
    found.to_check = list({claim.claim_id: claim for claim in found.to_check}.values())
    return found
