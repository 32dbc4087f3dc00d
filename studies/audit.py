"""Benchmark audits: how many claims a benchmark takes as true does the corpus contradict?

``run_audit`` reads a benchmark in its published format, keeps the claims it assumes true —
FEVEROUS ``SUPPORTS`` claims, AmbigQA questions with their gold answer (turned into a statement
by the LLM, prompt ``qa_to_statement``), WikiCollide claims labelled ``consistent`` — checks
each against the corpus with the configured system, and reports the share contradicted with its
intervals, most suspicious first (:func:`claire.studies.rate_runs.summarise`, ``audit.json`` and
``audit.md``). A FEVEROUS claim's evidence page is treated as its own article, so search looks
at the rest of the corpus, as for any fact. The run directory resumes like every other;
AmbigQA statements are kept in ``statements.jsonl`` so they are made once.
"""

from __future__ import annotations

import html
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from claire.llm.answers import text_of
from claire.llm.client import ChatClient, parsed_of
from claire.agent.runtime import open_system, prompt_library
from claire.domain import Claim, Passage
from claire.config import Config
from claire.errors import ConfigError, DatasetError
from claire.studies.ambigqa import QAItem, load_ambigqa, qa_pairs
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.tasks.feverous.dataset import load_feverous
from claire.runs.executor import resumable_step
from claire.evals.runner import run_eval
from claire.files import write_jsonl
from claire.studies.rate_statistics import cochran_sample_size
from claire.studies.rate_runs import CLAIMS, check_plan, job_lock, summarise, write_plan
from claire.agent.runtime import run_settings

AuditFormat = Literal["feverous", "ambigqa", "wikicollide"]
FORMATS = ("feverous", "ambigqa", "wikicollide")
STATEMENTS = "statements.jsonl"
_ELEMENT = re.compile(r"^(.*?)_(?:header_cell|cell|sentence|table_caption|item|section)_[\d_]+$|^(.*)_title$")
_STATEMENT = re.compile(r"<\s*statement\s*>(.*?)(?:<\s*/\s*statement\s*>|$)", re.IGNORECASE | re.DOTALL)
SELECTION = {
    "feverous": "FEVEROUS claims labelled SUPPORTS",
    "ambigqa": "AmbigQA questions with their gold answer, as statements",
    "wikicollide": "WikiCollide claims labelled consistent",
}


def evidence_page(element_id: str) -> str | None:
    """The page of a FEVEROUS evidence element id (``"Algebraic logic_sentence_0"`` → ``"Algebraic logic"``)."""
    match = _ELEMENT.match(element_id)
    if not match:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


def first_page(evidence: list[list[str]]) -> str:
    """The page of the first evidence element that names one ("" when none does)."""
    return next((page for group in evidence for element in group if (page := evidence_page(element))), "")


def parse_statement(text: str) -> str | None:
    """The statement in a model answer: inside ``<statement>`` tags, else a lone non-empty line."""
    text = html.unescape(text or "")
    match = _STATEMENT.search(text)
    candidate = match.group(1) if match else (text if len(text.strip().splitlines()) == 1 else "")
    candidate = " ".join(candidate.split()).strip('"“”')
    return candidate or None


def _claim_record(claim_id: str, fact: str, source_id: str, title: str = "", section: str = "",
                  content: str = "", **more: Any) -> dict[str, Any]:
    return {"claim_id": claim_id, "fact": fact, "source_id": source_id, "document_title": title,
            "section_title": section, "content": content, **more}


async def _statements(items: list[QAItem], out_dir: Path, llm: ChatClient, config: Config,
                      console: Console | None) -> dict[str, dict[str, Any]]:
    prompts = prompt_library(config)

    async def one(item: QAItem) -> dict[str, Any]:
        record: dict[str, Any] = {"item_id": item.item_id, "statement": None, "error": None}
        try:
            answer = await llm.ainvoke(prompts.render("qa_to_statement", question=item.question, answer=item.answer))
            typed = parsed_of(answer)
            record["statement"] = " ".join(typed.statement.split()) or None if typed is not None else parse_statement(text_of(answer))
            if record["statement"] is None:
                record["error"] = "the model gave no <statement>"
        except Exception as error:  # a re-run retries it
            record["error"] = f"{type(error).__name__}: {error}"
        return record

    if console is not None:
        console.print(f"turning {len(items)} question-answer pairs into statements (those done before are kept)…")
    return await resumable_step(items, key=lambda item: item.item_id, field="item_id", path=out_dir / STATEMENTS,
                                work=one, concurrency=config.eval.concurrency)


@dataclass(frozen=True)
class Selection:
    """Which of a benchmark's records an audit checks: the first ``limit``, or a random ``sample``
    of that many — or, given a ``margin`` of error, of as many as Cochran's rule asks at
    ``confidence`` for this many records (the paper's sample-size rule) — reproducible with
    ``seed`` and kept in file order, or all."""

    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    margin: float | None = None
    confidence: float = 0.99

    def size(self, population: int) -> int | None:
        """How many records a sample of ``population`` draws (None: no sample)."""
        if self.margin is not None:
            return cochran_sample_size(self.confidence, self.margin, 0.5, population)
        return self.sample

    def __call__(self, items: list[Any]) -> list[Any]:
        """The chosen items."""
        size = self.size(len(items)) if items else None
        if size is not None and size < len(items):
            chosen = sorted(random.Random(self.seed).sample(range(len(items)), size))
            return [items[i] for i in chosen]
        return items[: self.limit]


async def _feverous_claims(dataset: Path, pick: Selection, **_: Any) -> tuple[list[dict[str, Any]], int]:
    """FEVEROUS claims labelled SUPPORTS, with their evidence sets."""
    records = pick([r for r in load_feverous(dataset) if r.label == "SUPPORTS"])
    return [_claim_record(f"feverous-{r.id}", r.claim, r.id, title=first_page(r.evidence),
                          evidence=r.evidence, challenge=r.challenge) for r in records], 0


async def _wikicollide_claims(dataset: Path, pick: Selection, **_: Any) -> tuple[list[dict[str, Any]], int]:
    """WikiCollide claims labelled consistent, with their passages."""
    claims = pick([c for c in load_wikicollide(dataset) if c.label == "consistent"])
    return [_claim_record(c.claim_id, c.text, c.claim_id, title=c.context.document_title,
                          section=c.context.section_title, content=c.context.content) for c in claims], 0


async def _ambigqa_claims(dataset: Path, pick: Selection, *, out_dir: Path, llm: ChatClient, config: Config,
                          console: Console | None) -> tuple[list[dict[str, Any]], int]:
    """AmbigQA question-answer pairs turned into statements by the LLM (made once, kept in the run).
    A random sample is drawn by example (as the paper counts), ``limit`` takes the first pairs."""
    records = load_ambigqa(dataset)
    if pick.sample is not None:
        records = pick(records)
        pick = Selection()
    items = pick([item for record in records for item in qa_pairs(record)])
    made = await _statements(items, out_dir, llm, config, console)
    records, failed = [], 0
    for item in items:
        statement = made.get(item.item_id, {}).get("statement")
        if statement is None:
            failed += 1
            continue
        records.append(_claim_record(f"ambigqa-{item.item_id}", statement, item.item_id,
                                     question=item.question, answer=item.answer))
    return records, failed


CLAIM_SOURCES = {"feverous": _feverous_claims, "ambigqa": _ambigqa_claims, "wikicollide": _wikicollide_claims}
"""How the claims a benchmark takes as true are read from each format (as claims.jsonl records, and
how many could not be prepared)."""


async def run_audit(
    *,
    dataset: Path,
    fmt: str,
    config: Config,
    out_dir: Path,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    margin: float | None = None,
    confidence: float = 0.99,
    decision_files: list[Path] | None = None,
    show_progress: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Check the benchmark's assumed-true claims into ``out_dir`` (resuming) and report; the summary."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown --format {fmt!r}; use one of {', '.join(FORMATS)}")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    if sample is not None and (sample < 1 or limit is not None):
        raise ConfigError("--sample must be at least 1, and --sample and --limit cannot be combined")
    if margin is not None and (sample is not None or limit is not None):
        raise ConfigError("--margin draws Cochran's sample size itself: give it without --sample or --limit")
    dataset = Path(dataset)
    if not dataset.is_file():
        raise DatasetError(f"dataset file {dataset} not found")
    out_dir = Path(out_dir)
    wanted = {"kind": "audit", "format": fmt, "dataset": dataset.name, "index": config.retrieval.index}
    if sample is not None:  # a run made from another random sample would mix two samples
        wanted.update(sample=sample, seed=seed)
    if margin is not None:
        wanted.update(margin=margin, confidence=confidence, seed=seed)
    check_plan(out_dir, wanted)
    with job_lock(out_dir):
        await _audit(dataset, fmt, config, out_dir, Selection(limit, sample, seed, margin, confidence), confidence, wanted,
                     show_progress, console)
    return summarise(out_dir, confidence=confidence, decision_files=decision_files or [])


async def _audit(dataset: Path, fmt: str, config: Config, out_dir: Path, pick: Selection, confidence: float,
                 wanted: dict[str, Any], show_progress: bool, console: Console | None) -> None:
    llm = ChatClient.from_config(config.llm)
    try:
        records, failed = await CLAIM_SOURCES[fmt](dataset, pick, out_dir=out_dir, llm=llm, config=config, console=console)
        if not records:
            raise DatasetError(f"{dataset} holds no claims the benchmark takes as true ({SELECTION[fmt]})")
        if failed and console is not None:
            console.print(f"[yellow]note:[/] {failed} question-answer pairs could not be turned into statements "
                          f"(see {STATEMENTS}); re-run to retry them")
        write_jsonl(out_dir / CLAIMS, records)
        write_plan(out_dir, {**wanted, "dataset_path": str(dataset), "selection": SELECTION[fmt],
                             "confidence": confidence, "claims": len(records), "not_prepared": failed})
        claims = [Claim(claim_id=r["claim_id"], text=r["fact"],
                        context=Passage(document_title=r["document_title"], section_title=r["section_title"],
                                             content=r["content"]))
                  for r in records]
        async with open_system(config, llm=llm) as system:
            await run_eval(claims, system, out_dir, concurrency=config.eval.concurrency, dataset=dataset,
                           config_public=run_settings(config), show_progress=show_progress, console=console)
    finally:
        await llm.aclose()
