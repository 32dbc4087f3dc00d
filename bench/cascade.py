"""The cascade's cost against CLAIRE alone, on the local mock server (real HTTP, no model).

Synthetic facts (half of them planted contradictions) run through ``claire`` and ``cascade``
(retrieve-and-verify first) on the demo index, with a model that researches like a real one
(:func:`claire.testing.bench_models.research_answer`: five searches, then a verdict). It reports,
per system: LLM calls, prompt and completion tokens and seconds per claim, the share of facts the
cascade sent to CLAIRE, and AUROC — a figure of the plumbing only, since the mock's scores are
made up; the accuracy of the cascade is measured with a real model (evals/sweeps/real_model.yaml).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from claire import event_loop
from claire.agent.runtime import open_system
from claire.bench.llm import ServerProcess
from claire.config import Config
from claire.settings import LLMConfig
from claire.runs.predictions import load_predictions
from claire.evals.reporting import per_claim_costs
from claire.evals.runner import run_eval
from claire.llm.client import ChatClient
from claire.domain import Claim
from claire.testing.bench_models import research_answer


def _claims(count: int) -> list[Claim]:
    return [Claim(claim_id=f"cascade_{i:04d}", text=f"The bridge number {i} opened in {1900 + i}" + (" (planted)." if i % 2 else "."),
                  label="inconsistent" if i % 2 else "consistent") for i in range(count)]


async def _run(claims: int, latency: float, cut: float) -> dict[str, Any]:
    items = _claims(claims)
    figures = {}
    with ServerProcess(research_answer, latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        for system in ("claire", "cascade"):
            llm = ChatClient.from_config(LLMConfig(model="bench-model", base_url=server.base_url, api_key="bench-key",
                                                   cache=False, max_concurrency=16))
            config = Config().with_overrides({"agent.system": system, "retrieval.rerank": False, "agent.cascade_cut": cut,
                                              "agent.finish_action": True,  # the bench model finishes its research
                                              "agent.cascade_first": "rav"})
            try:
                async with open_system(config, llm=llm) as opened:
                    summary = await run_eval(items, opened, Path(tmp) / system, concurrency=8, show_progress=False)
            finally:
                await llm.aclose()
            lines = load_predictions(Path(tmp) / system)
            # a cascade's answer names the stage that gave it; an answer with no stage came from CLAIRE itself
            sent = sum((line.get("details") or {}).get("stage", "claire") == "claire" for line in lines)
            figures[system] = {**per_claim_costs(summary.metrics), "auroc": summary.metrics["auroc"],
                               "errors": summary.errors, "to_claire": sent / claims}
    return figures


def run_cascade_bench(*, claims: int = 40, latency: float = 0.05, cut: float = 0.3, console: Console | None = None) -> dict[str, Any]:
    """Measure CLAIRE alone and the cascade on the same facts; print a table and return the figures."""
    figures = event_loop.run(_run(claims, latency, cut))
    table = Table(title=f"Cascade (rav first, cut {cut:g}) vs CLAIRE alone: {claims} facts, mock model "
                        f"({latency * 1000:g} ms an answer, five searches per CLAIRE run)")
    for column in ("System", "Calls/claim", "Prompt tok/claim", "Compl. tok/claim", "s/claim", "To CLAIRE",
                   "AUROC*", "Errors"):
        table.add_column(column, justify="left" if column == "System" else "right")
    for system, row in figures.items():
        table.add_row(system, f"{row['calls']:.1f}", f"{row['prompt_tokens']:,.0f}", f"{row['completion_tokens']:,.0f}",
                      f"{row['seconds']:.2f}", f"{row['to_claire']:.0%}", f"{100 * (row['auroc'] or 0):.1f}",
                      str(row["errors"]))
    claire, cascade = figures["claire"], figures["cascade"]
    table.caption = ("*AUROC of the mock's made-up scores: plumbing only. "
                     f"The cascade makes {cascade['calls'] / claire['calls']:.2f}x the calls and "
                     f"{cascade['prompt_tokens'] / claire['prompt_tokens']:.2f}x the prompt tokens of CLAIRE alone, "
                     f"in {cascade['seconds'] / claire['seconds']:.2f}x the time per claim.")
    (console or Console()).print(table)
    return figures
