"""The corpus run: many articles of an index checked, their flags resolved and folded into one
worklist entry per contradiction (``claire worklist``).

Articles come from a list of titles (a file, a category or a WikiProject through the Action API,
a PagePile) or from every article of the index. For each article's text blocks the facts are
extracted (``facts.jsonl``, one record per block, so a rerun extracts nothing twice), then every
fact is checked into an ordinary run directory (``checks/``, resumed like an evaluation), each
flagged fact's conflict is named from the research's own answer and each distinct contradiction
resolved once (:mod:`claire.resolving.flags`), and the entries are ranked and written as
``worklist.jsonl`` and ``worklist.wiki`` (:mod:`claire.resolving.worklist`). Every LLM answer
goes through the response cache, so a run stopped at any point (even ``kill -9``) and started
again repeats no finished call and lists nothing twice.

Before it starts, :func:`estimate` says what the run will take: articles, blocks, facts, LLM
calls, tokens, cost (genai-prices) and time at the configured concurrency. ``max_cost`` stops the
checks cleanly once the run has spent that much; the facts left are checked by the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console

from claire.agent.extraction import block_facts
from claire.agent.runtime import open_retrieval, open_system, prompt_library, run_settings
from claire.config import Config
from claire.domain import Claim, recorded_outcome
from claire.errors import ClaireError, ConfigError
from claire.evals.runner import run_eval
from claire.jobs.infobox_pass import InfoboxPass, infobox_pass
from claire.jobs.scan import block_fact
from claire.languages import edition_of, edition_title, qualified
from claire.files import write_atomically
from claire.llm.client import ChatClient
from claire.usage import CallTokens, Usage, track_usage
from claire.resolving.cases import flagged_assessment
from claire.resolving.flags import resolve_flags
from claire.resolving.worklist import WorklistEntry, entries_from, ranked, worklist_wikitext
from claire.runs.executor import resumable_step
from claire.runs.predictions import load_predictions

log = logging.getLogger(__name__)

FACTS_PER_BLOCK = 3.0
"""Planning figure for the estimate: facts extracted from one text block before the run has
extracted any (measured on the demo corpus with the oracle: 2 to 4; real models vary)."""
CALLS_PER_FACT = {"claire": 6.0, "rav": 1.0, "nli": 20.0, "cascade": 3.0}
"""Planning figures for the estimate: LLM calls to check one fact, by system (claire: about four
research steps, the verifier and the first clarification; nli: one call per retrieved passage)."""
PROMPT_TOKENS, COMPLETION_TOKENS = 1_800, 250
"""Planning figures for the estimate: tokens of a typical call."""
SECONDS_PER_CALL = 2.0
"""Planning figure for the estimate's time: one answer from a hosted model."""


@dataclass
class Estimate:
    """What a corpus run is expected to take (planning figures, stated as such)."""

    articles: int
    blocks: int
    facts: int
    calls: int
    tokens: int
    cost_usd: float | None
    seconds: float
    model: str

    def lines(self) -> list[str]:
        """The estimate as the command prints it."""
        cost = f"about ${self.cost_usd:,.2f}" if self.cost_usd is not None else f"unknown (no price for {self.model})"
        minutes = self.seconds / 60
        return [f"{self.articles} article(s), {self.blocks} text block(s), about {self.facts} fact(s) to check",
                f"about {self.calls:,} LLM calls and {self.tokens:,} tokens; cost {cost}; "
                f"about {minutes:,.1f} min at this concurrency with {SECONDS_PER_CALL:g} s answers",
                "(planning figures: facts per block, calls per fact and tokens per call are typical values, "
                "not measured on this corpus)"]


def estimate(config: Config, articles: int, blocks: int, facts: int | None = None, more_facts: int = 0) -> Estimate:
    """The expected facts, calls, tokens, cost and time of checking ``blocks`` text blocks (``facts``
    when they are already extracted) with the configured system, model and concurrency, plus
    ``more_facts`` that need no extraction (the infobox rows left to the model)."""
    facts = (facts if facts is not None else round(blocks * FACTS_PER_BLOCK)) + more_facts
    per_fact = CALLS_PER_FACT.get(config.agent.system, 6.0)
    calls = blocks + round(facts * per_fact) + round(facts * 0.1 * 4)  # extraction, checks, a tenth resolved
    per_call = CallTokens(prompt=PROMPT_TOKENS, completion=COMPLETION_TOKENS).cost(config.llm.model)
    seconds = calls * SECONDS_PER_CALL / max(1, config.eval.concurrency)
    return Estimate(articles=articles, blocks=blocks, facts=facts, calls=calls,
                    tokens=calls * (PROMPT_TOKENS + COMPLETION_TOKENS),
                    cost_usd=None if per_call is None else calls * per_call, seconds=seconds, model=config.llm.model)


class BudgetReached(ClaireError):
    """The run spent its ``--max-cost``."""


class WithinBudget:
    """A system that refuses to start a check once the run's cost has reached ``max_cost`` (the
    refused facts are failed lines, checked again by the next run)."""

    def __init__(self, system: Any, usage: Usage, max_cost: float):
        self.system, self.usage, self.max_cost = system, usage, max_cost
        self.name = system.name
        self.score_kind = getattr(system, "score_kind", "probability")
        self.prompts = getattr(system, "prompts", None)
        self.reached = False

    async def assess(self, claim: Claim, **options: Any) -> Any:
        if (self.usage.cost_usd or 0.0) >= self.max_cost:
            self.reached = True
            raise BudgetReached(f"the run reached its budget of ${self.max_cost:g} (--max-cost) before this fact")
        return await self.system.assess(claim, **options)


@dataclass
class WorklistRun:
    """What a corpus run produced."""

    out_dir: Path
    articles: list[str]
    facts: int
    flagged: int
    entries: list[WorklistEntry]
    usage: dict[str, Any] = field(default_factory=dict)
    budget_reached: bool = False
    unchecked: int = 0
    wall_s: float = 0.0
    claims: list[Claim] = field(default_factory=list)  # the facts checked (a benchmark checks them again alone)
    engine_start_s: float | None = None  # the Ray engine: seconds until every actor had opened its system


WIKIPEDIA_API = "https://en.wikipedia.org/w/api.php"
NAMESPACES = frozenset(name for base in ("User", "Wikipedia", "File", "MediaWiki", "Template", "Help", "Category",
                                         "Portal", "Draft", "Module", "TimedText")
                       for name in (base, f"{base} talk")) | {"Talk", "Special", "Media"}
"""English Wikipedia's namespaces other than articles: a PagePile's pages in them are not articles
(an article's own title may hold a colon: "Mission: Impossible")."""
PAGEPILE_API = "https://pagepile.toolforge.org/api.php"


async def listed_titles(*, category: str | None = None, wikiproject: str | None = None, pagepile: int | None = None,
                        api_url: str = WIKIPEDIA_API, pagepile_url: str = PAGEPILE_API,
                        user_agent: str | None = None) -> list[str]:
    """Article titles from a wiki: a category's articles, a WikiProject's (the talk pages in its
    ``WikiProject NAME articles`` category, as articles), or a PagePile's pages (main namespace),
    through the polite MediaWiki client (``maxlag``, retries, the configured User-Agent)."""
    from claire.livewiki.mediawiki import USER_AGENT, MediaWikiClient

    client = MediaWikiClient(user_agent=user_agent or USER_AGENT)
    try:
        titles: list[str] = []
        if category:
            titles += await client.category_members(api_url, category)
        if wikiproject:
            name = wikiproject.removeprefix("WikiProject ").strip()
            talk = await client.category_members(api_url, f"WikiProject {name} articles", namespace=1)
            titles += [t.split(":", 1)[1] if t.startswith("Talk:") else t for t in talk]
        if pagepile is not None:
            data = await client.query(pagepile_url, {"id": str(pagepile), "action": "get_data", "format": "json",
                                                     "doit": "1"})
            pages = data.get("pages") if isinstance(data, dict) else None
            if not isinstance(pages, list):
                raise ConfigError(f"PagePile {pagepile} gave no page list (is the id right?)")
            titles += [title for title in (str(p).replace("_", " ") for p in pages if isinstance(p, str))
                       if title.split(":", 1)[0].strip() not in NAMESPACES or ":" not in title]
        return list(dict.fromkeys(titles))
    finally:
        await client.aclose()


def select_articles(retriever: Any, titles: Sequence[str] | None, language: str = "en") -> tuple[list[str], list[str]]:
    """(the articles to check, in order; the titles asked for that the index does not hold).
    ``titles`` None: every article of the index, in the index's order. An article of another
    edition than ``language`` (the index's own) is named ``de:Saturn V``."""
    if titles is None:
        store = getattr(retriever, "store", None)
        if store is None:
            raise ConfigError("--all reads every article of an index opened here; this search backend cannot list its "
                              "articles: give --titles, --category, --wikiproject or --pagepile")
        seen: dict[str, None] = {}
        for block in store.iter_blocks():
            seen.setdefault(qualified(edition_of(block, language), block.document_title, language), None)
        return list(seen), []
    wanted = list(dict.fromkeys(t.strip() for t in titles if t.strip()))
    missing = [t for t in wanted if not article_blocks(retriever, t, language)]
    return [t for t in wanted if t not in missing], missing


def article_blocks(retriever: Any, article: str, language: str) -> list[Any]:
    """The blocks of an article as a list names it (``de:Saturn V``, or a title of edition ``language``)."""
    edition, title = edition_title(article, language)
    if not retriever.has_document(title):
        return []
    return [block for block in retriever.document(title) if edition_of(block, language) == edition]


@asynccontextmanager
async def _engine(config: Config) -> AsyncIterator[Any]:
    """The pool of Ray actors that extract and check (``eval.engine = "ray"``), starting while the
    driver opens its own index; None for the local engine."""
    if config.eval.engine != "ray":
        yield None
        return
    from claire.runs.ray_engine import ray_checker

    async with ray_checker(config) as checker:
        yield checker


async def run_worklist(*, config: Config, out_dir: Path, titles: Sequence[str] | None = None,
                       max_facts_per_article: int | None = None, max_cost: float | None = None,
                       console: Console | None = None, show_progress: bool = True,
                       on_estimate: Callable[[Estimate], None] | None = None) -> WorklistRun:
    """The corpus run (see the module docstring)."""
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    async with _engine(config) as pool:
        return await _run(config, out_dir, titles, max_facts_per_article, max_cost, console, show_progress, on_estimate,
                          pool, started)


async def _run(config: Config, out_dir: Path, titles: Sequence[str] | None, max_facts_per_article: int | None,
               max_cost: float | None, console: Console | None, show_progress: bool,
               on_estimate: Callable[[Estimate], None] | None, pool: Any, started: float) -> WorklistRun:
    retriever = await asyncio.to_thread(open_retrieval, config)
    llm = ChatClient.from_config(config.llm)
    try:
        language = config.retrieval.language
        articles, missing = await asyncio.to_thread(select_articles, retriever, titles, language)
        if missing and console is not None:
            console.print(f"[yellow]note:[/] not in index {config.retrieval.index}: {', '.join(missing[:10])}"
                          + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
        if not articles:
            raise ConfigError(f"none of the articles asked for is in index {config.retrieval.index}")
        blocks = [b for article in articles for b in await asyncio.to_thread(article_blocks, retriever, article, language)
                  if b.block_type == "text" and b.content.strip()]
        infoboxes = await asyncio.to_thread(_infoboxes_first, config, retriever, articles, out_dir)
        if infoboxes is not None and console is not None:
            counts = infoboxes.counts()
            console.print(f"infobox pass: {counts['pairs']} pair(s) of infoboxes, {counts['rows']} fields aligned: "
                          f"{counts['same']} agree, {counts['differs']} differ (listed with no model call), "
                          f"{counts['to the model']} left to the model")
        planned = estimate(config, len(articles), len(blocks),
                           more_facts=len(infoboxes.to_check) if infoboxes is not None else 0)
        if on_estimate is not None:
            on_estimate(planned)
        with track_usage() as usage:
            async with (contextlib.nullcontext(pool) if pool is not None
                        else open_system(config, llm=llm, retriever=retriever)) as system:
                prompts = prompt_library(config)
                extract = (pool.extract if pool is not None
                           else lambda block: block_facts(block, llm=llm, prompts=prompts,
                                                          max_fact_chars=config.agent.max_fact_chars))
                extracted = await resumable_step(blocks, key=lambda b: b.id, field="block_id", path=out_dir / "facts.jsonl",
                                                 work=extract,  # one call a block: as many at once as the LLM allows
                                                 concurrency=max(config.eval.concurrency, config.llm.max_concurrency))
                claims: list[Claim] = []
                per_article: dict[str, int] = {}
                for block in blocks:
                    for text in (extracted.get(block.id) or {}).get("facts") or []:
                        if max_facts_per_article and per_article.get(block.document_title, 0) >= max_facts_per_article:
                            break
                        per_article[block.document_title] = per_article.get(block.document_title, 0) + 1
                        claims.append(block_fact(block, text))
                if infoboxes is not None:
                    claims += infoboxes.to_check
                claims = list({c.claim_id: c for c in claims}.values())
                checks = out_dir / "checks"
                checked = WithinBudget(system, usage, max_cost) if max_cost is not None else system
                if claims:
                    await run_eval(claims, checked, checks, concurrency=config.eval.concurrency,
                                   config_public=run_settings(config), show_progress=show_progress, console=console,
                                   retry_errors=True)
                reached = isinstance(checked, WithinBudget) and checked.reached
            by_id = {c.claim_id: c for c in claims}
            lines = [p for p in load_predictions(checks) if p["claim_id"] in by_id] if claims else []
            flagged = [(by_id[p["claim_id"]], flagged_assessment(p, by_id[p["claim_id"]]))
                       for p in lines if recorded_outcome(p) == "flagged"]
            flagged = [(claim, _with_block_data(assessment, retriever)) for claim, assessment in flagged]
            unchecked = sum(1 for p in lines if recorded_outcome(p) == "failed")
            named = infoboxes.cases if infoboxes is not None else []
            resolved = (await resolve_flags(config, flagged, retriever=retriever, llm=llm, cases=named)
                        if flagged or named else [])
        entries = ranked(entries_from(resolved))
        write_worklist(out_dir, entries)
        summary = {"articles": len(articles), "facts": len(claims), "flagged": len(flagged), "entries": len(entries),
                   "unchecked": unchecked, "budget_reached": reached, "usage": usage.to_dict(),
                   "engine": config.eval.engine, "engine_start_s": getattr(pool, "start_s", None),
                   "infoboxes": infoboxes.counts() if infoboxes is not None else None}
        write_atomically(out_dir / "worklist_run.json", json.dumps(summary, indent=2))
        return WorklistRun(out_dir=out_dir, articles=articles, facts=len(claims), flagged=len(flagged), entries=entries,
                           usage=usage.to_dict(), budget_reached=reached, unchecked=unchecked,
                           wall_s=time.perf_counter() - started, claims=claims,
                           engine_start_s=getattr(pool, "start_s", None))
    finally:
        retriever.close()
        await llm.aclose()


def _infoboxes_first(config: Config, retriever: Any, articles: Sequence[str], out_dir: Path) -> InfoboxPass | None:
    """The infobox pass (:mod:`claire.jobs.infobox_pass`) when the run searches other editions
    (``retrieval.languages``), its comparisons written to ``infoboxes.jsonl``; None otherwise."""
    if not config.retrieval.languages:
        return None
    from claire.indexes.embedders import MULTILINGUAL, load_embedder

    encode = load_embedder(MULTILINGUAL).encode_queries
    found = infobox_pass(retriever, articles, home=config.retrieval.language, editions=config.retrieval.languages,
                         encode=encode)
    write_atomically(out_dir / "infoboxes.jsonl", "".join(c.model_dump_json() + "\n" for c in found.comparisons))
    return found


def _with_block_data(assessment: Any, retriever: Any) -> Any:
    """A rebuilt assessment's passages with what their blocks keep in the index (citations, type,
    revision), which a trace does not keep."""
    titles = {e.document_title for e in assessment.evidence}
    blocks = {b.id: b for title in titles for b in retriever.document(title)}
    evidence = [e.model_copy(update={"citations": blocks[e.id].citations, "block_type": blocks[e.id].block_type,
                                     "revision_id": blocks[e.id].revision_id, "language": blocks[e.id].language})
                if e.id in blocks else e for e in assessment.evidence]
    return assessment.model_copy(update={"evidence": evidence})


def write_worklist(out_dir: Path, entries: Sequence[WorklistEntry], *, keep_decisions: bool = True) -> None:
    """``worklist.jsonl`` (one entry a line; with ``keep_decisions``, the decisions an editor recorded
    in the file are kept over the entries') and ``worklist.wiki`` (the entries still open)."""
    path = out_dir / "worklist.jsonl"
    kept: dict[str, WorklistEntry] = {}
    if path.exists() and keep_decisions:
        try:
            kept = {e.id: e for e in read_worklist(out_dir)}
        except ClaireError as error:  # a file another version wrote: its decisions cannot be carried over
            log.warning("the earlier worklist's decisions are not kept: %s", error)
    merged = []
    for entry in entries:
        before = kept.get(entry.id)
        if before is not None and before.status != "open":
            entry = entry.model_copy(update={"status": before.status, "note": before.note})
        merged.append(entry)
    write_atomically(path, "".join(e.model_dump_json() + "\n" for e in merged))
    write_atomically(out_dir / "worklist.wiki", worklist_wikitext([e for e in merged if e.status == "open"]))


def read_worklist(out_dir: Path) -> list[WorklistEntry]:
    """The entries of a run directory's ``worklist.jsonl``."""
    from claire.files import read_log
    from claire.validation import validated_record

    path = Path(out_dir) / "worklist.jsonl"
    return [validated_record(WorklistEntry, value, f"{path}: entry {number}")
            for number, value in enumerate(read_log(path), start=1)]
