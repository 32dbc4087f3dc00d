"""Prompt tokens per claim with and without the context budget, and how much of each prompt kind
a provider's prompt cache could serve (real HTTP to the local mock server, real retrieval over an
index built from the sample's corpus, no model).

Every claim gets the longest research CLAIRE allows: a mock model that searches
``max_steps`` times with different queries (never finishing early), then a verdict. The same run
is made with a window no prompt reaches (no budget: the prompts as they were) and with the
window a small local model has (8,192 tokens by default). The server counts the tokens of each
prompt as a typical tokenizer would; the table shows, per claim, the total and the largest
single prompt, and how many prompts the 8k server would have rejected.

The second table plays OpenAI's prompt cache (:class:`~claire.testing.mock_openai.PrefixCache`)
over a run of every claim, one after another, with the settings of a batch run (RankGPT
reranking, the two-sided report) and a model that uses every tool (search, clarify_entity,
explain, then finish) — and the NLI pipeline on the same claims. Per prompt template it prints
the share of prompt tokens that repeat an earlier request's prefix, counted from 1,024 tokens in
128-token steps as OpenAI's cache counts them: what a provider would bill at its cached price.
It measures the templates as they are (``prompts/*.j2``).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_system
from claire.config import Config
from claire.errors import ClaireError
from claire.runs.executor import Executor
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.indexes.corpus import read_corpus
from claire.indexes.retriever import build_index
from claire.testing.doubles import kind_of
from claire.testing.mock_openai import CACHE_MIN_TOKENS, CACHE_STEP_TOKENS, MockOpenAIServer

UNBOUNDED = 10_000_000
_WORD = re.compile(r"[A-Za-z0-9][\w'-]+")


def _controller_turn(body: dict[str, Any]) -> tuple[list[str], int]:
    """The words of the fact a controller request is about, and how many steps it has taken."""
    user = body["messages"][-1]["content"]
    fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
    return _WORD.findall(fact) or ["Wikipedia"], user.count("<observation>")


def research_responder(body: dict[str, Any]) -> dict[str, Any]:
    """A model that uses every step: search i looks for a different slice of the fact's words."""
    kind = kind_of(body)
    if kind == "controller":
        words, step = _controller_turn(body)
        query = " ".join(words[(step * 2) % len(words):][:5] or words[:5])
        return {"tool_calls": [{"name": "search", "arguments": {"query": f"{query} {step}"}}]}
    if kind == "verifier":
        return {"content": "<restated_claim>r</restated_claim><analysis>[1] agrees.</analysis>"
                           "<inconsistency_score>0.3</inconsistency_score>"}
    if kind == "rankgpt":
        return {"content": "[1] > [2]"}
    return {"content": f"A short {kind} answer."}


async def _assessed(config: Config, claims: list[Any]) -> AsyncIterator[Any]:
    """Each claim once the configured system has assessed it (the first that fails ends the run)."""
    executor = Executor(1)
    async with open_system(config) as system:
        for claim in claims:
            outcome = await executor.check(system, claim)
            if outcome.failed:
                why = outcome.error or outcome.result.error
                raise ClaireError(f"the prompt benchmark failed on claim {claim.claim_id}: {why}")
            yield claim


async def _run(config: Config, claims: list[Any], server: MockOpenAIServer, window: int) -> dict[str, Any]:
    totals, largest = [], []
    start = len(server.prompt_tokens)
    async for _ in _assessed(config, claims):
        sizes = server.prompt_tokens[start:]
        start = len(server.prompt_tokens)
        totals.append(sum(sizes))
        largest.append(max(sizes))
    return {"mean_per_claim": float(np.mean(totals)), "max_per_claim": int(max(totals)), "largest_prompt": int(max(largest)),
            "over_window": sum(size > window for size in server.prompt_tokens), "rejected": server.rejected}


CACHE_PLAN = ("search", "clarify_entity", "explain", "search", "finish")
"""What the model does at each step of the prompt-cache run."""


def tool_responder(body: dict[str, Any]) -> dict[str, Any]:
    """A model that takes the steps of ``CACHE_PLAN`` (search, clarify, explain, search again,
    finish), then reranks, judges, writes the two-sided report and labels NLI passages."""
    kind = kind_of(body)
    if kind == "controller":
        words, step = _controller_turn(body)
        action = CACHE_PLAN[min(step, len(CACHE_PLAN) - 1)]
        argument = {"search": {"query": " ".join(words[step % len(words):][:5])},
                    "clarify_entity": {"name_and_description": f"{words[0]} (the subject of the fact)"},
                    "explain": {"topic": words[-1]}, "finish": {}}[action]
        return {"tool_calls": [{"name": action, "arguments": argument}]}
    if kind == "nli":
        return {"content": "<label>NOT ENOUGH INFO</label><reason>unrelated</reason>"}
    return research_responder(body)


def _cache_run(config: Config, claims: list[Any], system: str) -> list[dict[str, Any]]:
    """Every request of ``system`` over ``claims`` against a server playing OpenAI's prompt cache:
    its template, prompt tokens and the tokens the cache served."""
    async def run(server: MockOpenAIServer) -> None:
        async for _ in _assessed(config.with_overrides({"llm.base_url": server.base_url, "agent.system": system}), claims):
            pass

    with MockOpenAIServer(tool_responder, prompt_cache=True) as server:
        event_loop.run(run(server))
        return [{"template": body.get("claire_prompt") or "unknown", "prompt": size, "cached": cached}
                for body, size, cached in zip(server.requests, server.prompt_tokens, server.cached_tokens)]


def prefix_shares(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per template (and ``all``): requests, prompt tokens, tokens a prompt cache served, their share."""
    shares: dict[str, dict[str, Any]] = {}
    for request in requests:
        for key in (request["template"], "all"):
            row = shares.setdefault(key, {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0})
            row["requests"] += 1
            row["prompt_tokens"] += request["prompt"]
            row["cached_tokens"] += request["cached"]
    for row in shares.values():
        row["share"] = row["cached_tokens"] / row["prompt_tokens"] if row["prompt_tokens"] else 0.0
    return shares


def run_prompt_bench(dataset: Path, corpus: Path, *, window: int = 8192, max_steps: int = 10, docs_per_query: int = 15,
                     report: bool = False, console: Console | None = None) -> dict[str, Any]:
    """Measure prompt tokens per claim before and after the budget, and the prompt-cache shares
    per template; prints two tables."""
    console = console or Console()
    claims = load_wikicollide(dataset)
    with tempfile.TemporaryDirectory() as tmp:
        build_index(read_corpus(corpus).blocks, name="bench", embedder="minilm", root=Path(tmp))
        results: dict[str, Any] = {}
        for label, context_window in (("no budget", UNBOUNDED), (f"budget {window}", window)):
            # Without the budget the server only counts (an 8k model would reject); with it, it rejects.
            limit = window if context_window == window else None
            with MockOpenAIServer(research_responder, max_prompt_tokens=limit) as server:
                config = Config().with_overrides({
                    "llm.base_url": server.base_url, "llm.model": "bench-local-model", "llm.api_key": "bench-key",
                    "llm.cache": False, "llm.context_window": context_window, "llm.max_attempts": 1,
                    "retrieval.path": tmp, "retrieval.index": "bench", "retrieval.rerank": False,
                    "agent.max_steps": max_steps, "agent.docs_per_query": docs_per_query, "agent.report": report,
                })
                results[label] = event_loop.run(_run(config, claims, server, window))
        cache_config = Config().with_overrides({
            "llm.model": "bench-local-model", "llm.api_key": "bench-key", "llm.cache": False, "llm.max_attempts": 1,
            "llm.context_window": UNBOUNDED, "llm.prompt_header": True,  # the server reads each request's template
            "retrieval.path": tmp, "retrieval.index": "bench", "retrieval.rerank": True, "agent.report": True,
            "agent.finish_action": True,  # its plan ends with finish()
        })
        shares = prefix_shares(_cache_run(cache_config, claims, "claire") + _cache_run(cache_config, claims, "nli"))
    table = Table(title=f"Prompt tokens per claim, {len(claims)} claims, {max_steps} steps x {docs_per_query} passages")
    for column in ("Run", "mean / claim", "max / claim", "largest prompt", f"prompts over {window}"):
        table.add_column(column, justify="left" if column == "Run" else "right")
    for label, r in results.items():
        table.add_row(label, f"{r['mean_per_claim']:,.0f}", f"{r['max_per_claim']:,}", f"{r['largest_prompt']:,}", str(r["over_window"]))
    console.print(table)
    results["prefix_cache"] = shares
    cache_table = Table(title=f"Prompt tokens repeating an earlier request's prefix (cacheable from {CACHE_MIN_TOKENS:,} "
                              f"tokens in {CACHE_STEP_TOKENS}-token steps), {len(claims)} claims: CLAIRE with reranking "
                              "and report, then the NLI pipeline")
    for column in ("Prompt template", "requests", "prompt tokens", "cacheable", "share"):
        cache_table.add_column(column, justify="left" if column == "Prompt template" else "right")
    templates = sorted((name for name in shares if name != "all"), key=lambda name: -shares[name]["prompt_tokens"])
    for template in [*templates, "all"]:
        row = shares[template]
        cache_table.add_row(template, f"{row['requests']:,}", f"{row['prompt_tokens']:,}", f"{row['cached_tokens']:,}",
                            f"{row['share']:.2f}", end_section=template == templates[-1])
    console.print(cache_table)
    return results
