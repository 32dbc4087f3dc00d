"""Whole-passage scanning: extract the atomic facts of a passage, check each against the corpus
(excluding the article itself) with any system, and rank them by inconsistency score.

The results are an ordinary run directory (predictions.jsonl, metrics.json, ...) so a scan can
be resumed and compared like an evaluation; ``scan.md`` adds each flagged fact's evidence and
reasoning for an editor.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from claire.agent.extraction import extract_facts
from claire.tasks.fact_limits import fact_length_problem
from claire.llm.client import ChatClient
from claire.agent.runtime import open_retrieval, open_system, prompt_library
from claire.domain import Block, Claim, Passage
from claire.config import Config
from claire.errors import ClaireError, NothingToCheck
from claire.runs.predictions import FactRow, load_predictions, row_from_prediction
from claire.evals.runner import run_eval
from claire.agent.runtime import run_settings
from claire.jobs.spans import locate


@dataclass
class ScanResult:
    """The facts of a scan and where the run directory is."""
    out_dir: Path
    title: str
    title_in_index: bool | None
    rows: list[FactRow]

    @property
    def flagged(self) -> list[FactRow]:
        """The facts the scan flagged."""
        return [row for row in self.rows if row.outcome == "flagged"]

    @property
    def failed(self) -> list[FactRow]:
        """The facts that could not be checked (to be checked again)."""
        return [row for row in self.rows if row.outcome == "failed"]


def block_fact(block: Block, text: str) -> Claim:
    """A fact ``text`` stated in corpus block ``block``, as a claim in that block's context (the
    corpus run's facts and the infobox pass's rows), with an id stable across runs."""
    return Claim(claim_id=fact_id(f"{block.id}\n{text}"), text=text, context=Passage(
        document_title=block.document_title, section_title=block.section_title, content=block.content, url=block.url,
        id=block.id, revision_id=block.revision_id, language=block.language, block_type=block.block_type,
        citations=list(block.citations) if block.citations is not None else None))


def fact_id(text: str) -> str:
    """A stable id for a fact, so a re-run of the same scan resumes instead of starting over."""
    return "fact-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


def default_out_dir(title: str) -> Path:
    """The run directory a scan of this title and text uses unless told otherwise."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "article"
    return Path("out") / f"scan-{slug}"


def render_scan_report(result: ScanResult, system: str) -> str:
    """The Markdown report of a scan."""
    lines = [f"# Scan of “{result.title}” with {system}", ""]
    if result.title_in_index is False:
        lines += [f"The article “{result.title}” is not in the index, so nothing was excluded from search.", ""]
    lines += [f"{len(result.rows)} facts checked; {len(result.flagged)} flagged as inconsistent.", "",
              "| score | verdict | fact | key evidence |", "|---:|---|---|---|"]
    for row in result.rows:
        score = "—" if row.score is None else f"{row.score:.2f}"
        lines.append(f"| {score} | {row.verdict if row.outcome != 'failed' else 'failed'} | {row.fact} | {row.key_evidence or '—'} |")
    for row in result.flagged:
        lines += ["", f"## {row.fact}", "", f"Inconsistency score {row.score:.2f}.", ""]
        for passage in row.passages:
            where = f"{passage.get('document_title')} > {passage.get('section_title')}".rstrip(" >")
            link = f" ({passage['url']})" if passage.get("url") else ""
            lines += [f"> [{passage.get('n')}] **{where}**{link}: {passage.get('content')}", ">"]
        if row.reasoning:
            lines += ["", row.reasoning]
    return "\n".join(lines) + "\n"


def facts_within_limit(facts: list, limit: int, console: Console | None) -> list:
    """The extracted facts short enough to check; the others are dropped with a warning."""
    kept = []
    for fact in facts:
        problem = fact_length_problem(fact.text, limit, what="an extracted fact")
        if problem and problem[1]:
            message = f"skipped {problem[0].split(';')[0]}"
            if console is not None:
                console.print(f"[yellow]warning:[/] {message}")
            continue
        kept.append(fact)
    if facts and not kept:
        raise ClaireError(f"every extracted fact is over agent.max_fact_chars ({limit:,} characters); nothing to check")
    return kept


def passage_language(config: Config, edition: str | None = None) -> str | None:
    """The language a passage given to check is written in, for the extraction and the sentence
    splitter: its edition (``edition``, else the facts' edition ``retrieval.language``) when it is not
    English (None: English, the paper's prompt unchanged)."""
    language = edition or config.retrieval.language
    return language if language and language != "en" else None


def context_language(config: Config, edition: str | None) -> str | None:
    """What a fact's context says of its edition: ``edition`` when it is not the index's own
    (``retrieval.language``), else nothing (a passage that names no language is of the index's)."""
    return edition if edition and edition != config.retrieval.language else None


async def extract_located_claims(
    *, title: str, text: str, llm: ChatClient, config: Config, section: str = "", max_facts: int | None = None,
    console: Console | None = None, edition: str | None = None,
) -> list[tuple[Claim, tuple[int, int] | None]]:
    """The passage's atomic facts as claims with stable ids, each in the context of its block and
    section (a heading in the text names the section of what follows it), with the span of the
    sentence of ``text`` it states (None when no sentence matches). ``edition``: the edition the
    passage is from, when it is not ``retrieval.language`` (a page of another wiki)."""
    language = passage_language(config, edition)
    facts = await extract_facts(title=title, section=section, text=text, llm=llm, prompts=prompt_library(config),
                                language=language)
    if not facts:
        raise NothingToCheck("no checkable facts were found in the text")
    facts = facts_within_limit(facts, config.agent.max_fact_chars, console)
    facts = facts[:max_facts] if max_facts else facts
    return [(Claim(claim_id=fact_id(f.text), text=f.text,
                   context=Passage(document_title=title, section_title=f.section or section, content=f.block,
                                   language=context_language(config, edition))),
             locate(f.text, text, source=f.source, block=f.block, language=language)) for f in facts]


async def extract_claims(
    *, title: str, text: str, llm: ChatClient, config: Config, section: str = "", max_facts: int | None = None,
    console: Console | None = None,
) -> list[Claim]:
    """The passage's atomic facts as claims with stable ids, each in the context of its block and section."""
    located = await extract_located_claims(title=title, text=text, llm=llm, config=config, section=section,
                                           max_facts=max_facts, console=console)
    return [claim for claim, _ in located]


async def run_scan(
    *,
    title: str,
    text: str,
    config: Config,
    section: str = "",
    out_dir: Path | None = None,
    max_facts: int | None = None,
    show_progress: bool = True,
    console: Console | None = None,
) -> ScanResult:
    """Extract a passage's facts and check each one, into a resumable run directory."""
    out_dir = Path(out_dir) if out_dir else default_out_dir(title)
    llm = ChatClient.from_config(config.llm)
    retriever = open_retrieval(config)
    try:
        claims = await extract_claims(title=title, section=section, text=text, llm=llm, config=config, max_facts=max_facts,
                                      console=console)
        has_document = getattr(retriever, "has_document", None)
        title_in_index = has_document(title) if has_document else None
        if title_in_index is False and console is not None:
            console.print(f"[yellow]note:[/] the article “{title}” is not in the index, so nothing is excluded from search")
        async with open_system(config, llm=llm, retriever=retriever) as system:
            await run_eval(claims, system, out_dir, concurrency=config.eval.concurrency,
                           config_public=run_settings(config), show_progress=show_progress, console=console)
            name = system.name
    finally:
        retriever.close()
        await llm.aclose()
    wanted = {claim.claim_id for claim in claims}
    rows = [row_from_prediction(p) for p in load_predictions(out_dir) if p["claim_id"] in wanted]
    rows.sort(key=lambda row: (row.score is None, -(row.score or 0.0)))
    result = ScanResult(out_dir=out_dir, title=title, title_in_index=title_in_index, rows=rows)
    (out_dir / "scan.md").write_text(render_scan_report(result, name), encoding="utf-8")
    return result
