"""Prompt tokens per claim with and without the context budget (real HTTP to the local mock
server, real retrieval over an index built from the sample's corpus, no model).

Every claim gets the longest research CLAIRE allows: a mock model that searches
``max_steps`` times with different queries (never finishing early), then a verdict. The same run
is made with a window no prompt reaches (no budget: the prompts as they were) and with the
window a small local model has (8,192 tokens by default). The server counts the tokens of each
prompt as a typical tokenizer would; the table shows, per claim, the total and the largest
single prompt, and how many prompts the 8k server would have rejected.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_system
from claire.config import Config
from claire.errors import ClaireError
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.indexes.corpus import read_corpus
from claire.indexes.retriever import build_index
from claire.testing.doubles import kind_of
from claire.testing.mock_openai import MockOpenAIServer

UNBOUNDED = 10_000_000
_WORD = re.compile(r"[A-Za-z0-9][\w'-]+")


def research_responder(body: dict[str, Any]) -> dict[str, Any]:
    """A model that uses every step: search i looks for a different slice of the fact's words."""
    kind = kind_of(body)
    user = body["messages"][-1]["content"]
    if kind == "controller":
        fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
        words = _WORD.findall(fact) or ["Wikipedia"]
        step = user.count("<observation>")
        query = " ".join(words[(step * 2) % len(words):][:5] or words[:5])
        return {"tool_calls": [{"name": "search", "arguments": {"query": f"{query} {step}"}}]}
    if kind == "verifier":
        return {"content": "<restated_claim>r</restated_claim><analysis>[1] agrees.</analysis>"
                           "<inconsistency_score>0.3</inconsistency_score>"}
    if kind == "rankgpt":
        return {"content": "[1] > [2]"}
    return {"content": f"A short {kind} answer."}


async def _run(config: Config, claims: list[Any], server: MockOpenAIServer, window: int) -> dict[str, Any]:
    totals, largest = [], []
    async with open_system(config) as system:
        for claim in claims:
            start = len(server.prompt_tokens)
            assessment = await system.assess(claim)
            sizes = server.prompt_tokens[start:]
            totals.append(sum(sizes))
            largest.append(max(sizes))
            if assessment.error:
                raise ClaireError(f"the prompt benchmark failed on claim {claim.claim_id}: {assessment.error}")
    return {"mean_per_claim": float(np.mean(totals)), "max_per_claim": int(max(totals)), "largest_prompt": int(max(largest)),
            "over_window": sum(size > window for size in server.prompt_tokens), "rejected": server.rejected}


def run_prompt_bench(dataset: Path, corpus: Path, *, window: int = 8192, max_steps: int = 10, docs_per_query: int = 15,
                     report: bool = False, console: Console | None = None) -> dict[str, Any]:
    """Measure prompt tokens per claim before and after the budget; prints a table."""
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
    table = Table(title=f"Prompt tokens per claim, {len(claims)} claims, {max_steps} steps x {docs_per_query} passages")
    for column in ("Run", "mean / claim", "max / claim", "largest prompt", f"prompts over {window}"):
        table.add_column(column, justify="left" if column == "Run" else "right")
    for label, r in results.items():
        table.add_row(label, f"{r['mean_per_claim']:,.0f}", f"{r['max_per_claim']:,}", f"{r['largest_prompt']:,}", str(r["over_window"]))
    console.print(table)
    return results
