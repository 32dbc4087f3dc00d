"""Estimating the share of a corpus's facts that the rest of it contradicts (the paper's section 5).

``run_estimate`` draws blocks (or articles) uniformly from an index with a seed, extracts the
atomic facts of each sampled block, draws the wanted number of facts uniformly from all of them,
checks each with the configured system (excluding its own article from search), and writes the
report (:func:`claire.studies.rate_runs.summarise`). Every stage is kept in the run directory —
``sample.jsonl`` (the drawn blocks), ``facts.jsonl`` (extraction, one line per block),
``claims.jsonl`` (the drawn facts), ``predictions.jsonl`` — so a killed run resumes where it
stopped and a finished one re-reports from its files alone.

Because blocks are drawn uniformly and then facts uniformly from the pooled facts, a block with
more facts contributes more of them: each fact of the corpus has about the same chance to be
checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console

from claire.agent.extraction import extract_facts
from claire.llm.client import ChatClient
from claire.agent.runtime import open_retrieval, open_system, prompt_library
from claire.domain import Claim, Passage
from claire.config import Config
from claire.errors import ClaireError, ConfigError
from claire.runs.executor import resumable_step
from claire.evals.runner import run_eval
from claire.indexes.sampling import Unit, sample_index
from claire.files import read_log, write_jsonl
from claire.studies.rate_runs import CLAIMS, FACTS, check_plan, job_lock, summarise, write_plan
from claire.agent.runtime import run_settings

SAMPLE = "sample.jsonl"


def claim_id(block_id: str, fact: str) -> str:
    """A stable id for a fact of a block."""
    return "fact-" + hashlib.sha1(f"{block_id}\n{fact}".encode("utf-8")).hexdigest()[:12]


def draw_facts(blocks: list[dict[str, Any]], extracted: dict[str, list[str]], k: int, seed: int) -> list[dict[str, Any]]:
    """``k`` facts drawn uniformly (without replacement) from all facts of ``blocks``, in draw order."""
    pool = [(block, fact) for block in blocks for fact in extracted.get(str(block["id"]), [])]
    chosen = random.Random(f"{seed}/facts").sample(range(len(pool)), min(k, len(pool)))
    claims = []
    for index in chosen:
        block, fact = pool[index]
        claims.append({
            "claim_id": claim_id(str(block["id"]), fact), "fact": fact, "block_id": block["id"],
            "document_title": block.get("document_title", ""), "section_title": block.get("section_title", ""),
            "content": block.get("content", ""), "url": block.get("url"), "categories": block.get("categories"),
        })
    return claims


async def _extract_all(blocks: list[dict[str, Any]], out_dir: Path, llm: ChatClient, config: Config,
                       console: Console | None) -> dict[str, list[str]]:
    """The facts of every sampled block, extracting only those not yet in facts.jsonl (or failed)."""
    prompts = prompt_library(config)

    async def one(block: dict[str, Any]) -> dict[str, Any]:
        record: dict[str, Any] = {"block_id": str(block["id"]), "facts": [], "error": None}
        try:
            facts = await extract_facts(title=block.get("document_title", ""), section=block.get("section_title", ""),
                                        text=block.get("content", ""), llm=llm, prompts=prompts)
            record["facts"] = [fact.text for fact in facts]
        except Exception as error:  # one failed block must not end the estimate; a re-run retries it
            record["error"] = f"{type(error).__name__}: {error}"
        return record

    if console is not None:
        console.print(f"extracting facts from the {len(blocks)} sampled blocks (those done before are kept)…")
    done = await resumable_step(blocks, key=lambda block: str(block["id"]), field="block_id", path=out_dir / FACTS,
                                work=one, concurrency=config.eval.concurrency)
    failed = [r for r in done.values() if r.get("error")]
    if failed and console is not None:
        console.print(f"[yellow]note:[/] fact extraction failed for {len(failed)} blocks (e.g. {failed[0]['error']}); "
                      "they are left out — re-run the command to retry them")
    return {block_id: r["facts"] for block_id, r in done.items() if not r.get("error")}


async def run_estimate(
    *,
    config: Config,
    sample: int,
    seed: int,
    out_dir: Path,
    units: int | None = None,
    unit: Unit = "block",
    confidence: float = 0.99,
    decision_files: Iterable[str | Path] = (),
    show_progress: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Sample, extract, check and report into ``out_dir`` (resuming what is there); the summary."""
    if sample < 1:
        raise ConfigError(f"--sample must be at least 1 fact, got {sample}")
    if config.retrieval.backend != "qdrant":
        raise ConfigError("an estimate samples the blocks of a Qdrant index: set retrieval.backend = \"qdrant\" and --index")
    out_dir = Path(out_dir)
    wanted = {"kind": "estimate", "index": config.retrieval.index, "seed": seed, "unit": unit,
              "units": units or sample, "facts_wanted": sample}
    check_plan(out_dir, wanted)  # fail before creating anything
    with job_lock(out_dir):
        plan = check_plan(out_dir, wanted)  # again, now that no other process can be writing it
        await _estimate(config, plan, wanted, out_dir, sample, seed, unit, confidence, show_progress, console)
    return summarise(out_dir, confidence=confidence, decision_files=decision_files)


async def _estimate(config: Config, plan: dict[str, Any] | None, wanted: dict[str, Any], out_dir: Path, sample: int,
                    seed: int, unit: Unit, confidence: float, show_progress: bool, console: Console | None) -> None:
    llm = ChatClient.from_config(config.llm)
    retriever = open_retrieval(config)
    try:
        store = getattr(retriever, "store", None)
        if store is None:
            raise ConfigError("this search backend cannot list its blocks, so it cannot be sampled")
        if plan is None:
            drawn = await asyncio.to_thread(sample_index, store, wanted["units"], seed=seed, unit=unit)
            out_dir.mkdir(parents=True, exist_ok=True)
            write_jsonl(out_dir / SAMPLE, drawn.blocks)
            plan = {**wanted, "confidence": confidence, "corpus_blocks": drawn.corpus_blocks,
                    "corpus_articles": drawn.corpus_articles, "units_drawn": len(drawn.units),
                    "blocks_drawn": len(drawn.blocks)}
            write_plan(out_dir, plan)  # written last: a plan means the sample is complete
        blocks = read_log(out_dir / SAMPLE)
        if len(blocks) != plan["blocks_drawn"]:
            raise ConfigError(f"{out_dir / SAMPLE} is incomplete; delete {out_dir} and start again")
        extracted = await _extract_all(blocks, out_dir, llm, config, console)
        if not (out_dir / CLAIMS).exists():
            drawn_facts = draw_facts(blocks, extracted, sample, seed)
            if not drawn_facts:
                raise ClaireError("no facts could be extracted from the sampled blocks; check the LLM endpoint and re-run")
            if len(drawn_facts) < sample and console is not None:
                console.print(f"[yellow]note:[/] the sampled blocks hold only {len(drawn_facts)} facts; all are checked "
                              "(sample more blocks with --blocks for more)")
            write_jsonl(out_dir / CLAIMS, drawn_facts)
        claims = [
            Claim(claim_id=c["claim_id"], text=c["fact"],
                  context=Passage(document_title=c["document_title"], section_title=c.get("section_title") or "",
                                       content=c.get("content") or "", url=c.get("url")))
            for c in read_log(out_dir / CLAIMS)
        ]
        async with open_system(config, llm=llm, retriever=retriever) as system:
            await run_eval(claims, system, out_dir, concurrency=config.eval.concurrency,
                           config_public=run_settings(config), show_progress=show_progress, console=console)
    finally:
        retriever.close()
        await llm.aclose()
