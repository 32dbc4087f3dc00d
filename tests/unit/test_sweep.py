"""Sweeps: grid expansion, setting names, the shipped sweep files, a 2x2 run and its outputs."""

from __future__ import annotations

import asyncio
import csv
import json
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from claire.domain import Assessment, Claim
from claire.config import Config
from claire.errors import ConfigError
from claire.evals.sweep import plan_sweep, run_sweep

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
SHIPPED = Path(__file__).resolve().parents[2] / "evals" / "sweeps"


class CellSystem:
    """Scores depend on the cell's budget: claims whose number divides max_steps + docs_per_query
    get their score inverted, so cells differ in AUROC."""

    def __init__(self, config: Config):
        self.name = config.agent.system
        self.config = config

    async def assess(self, claim: Claim) -> Assessment:
        number = int(claim.claim_id.split("_")[1])
        score = 0.7 if claim.label == "inconsistent" else 0.3
        if number % (self.config.agent.max_steps + self.config.agent.docs_per_query) == 0:
            score = 1 - score
        assessment = Assessment(claim_id=claim.claim_id, system=self.name, claim_text=claim.text, score=score,
                                threshold=0.5, usage={"prompt_tokens": 8, "completion_tokens": 2, "calls": 1})
        assessment.decide()
        return assessment


class Factory:
    def __init__(self) -> None:
        self.opened: list[Config] = []
        self.closed = 0

    @asynccontextmanager
    async def __call__(self, config: Config):
        self.opened.append(config)
        try:
            yield CellSystem(config)
        finally:
            self.closed += 1


def write_sweep(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GRID_2X2 = """
name: budget
base:
  agent.clarify_k: 5
grid:
  max_steps: [3, 5]
  agent.docs_per_query: [5, 10]
"""


def sweep(tmp_path, sweep_file, factory, **kwargs):
    return asyncio.run(run_sweep(
        sweep_file, dataset=FIXTURE, out_dir=tmp_path / "out", base_config=Config(), make_system=factory,
        show_progress=False, **kwargs,
    ))


def test_two_by_two_sweep(tmp_path):
    factory = Factory()
    summary = sweep(tmp_path, write_sweep(tmp_path, GRID_2X2), factory, concurrency=2)
    names = ["max_steps=3,docs_per_query=5", "max_steps=3,docs_per_query=10",
             "max_steps=5,docs_per_query=5", "max_steps=5,docs_per_query=10"]
    assert [r.cell.name for r in summary.cells] == names
    assert factory.closed == 4
    assert [(c.agent.max_steps, c.agent.docs_per_query, c.agent.clarify_k) for c in factory.opened] == [
        (3, 5, 5), (3, 10, 5), (5, 5, 5), (5, 10, 5)]
    out = tmp_path / "out"
    with open(out / "summary.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["cell"] for r in rows] == names
    assert [(r["max_steps"], r["docs_per_query"]) for r in rows] == [("3", "5"), ("3", "10"), ("5", "5"), ("5", "10")]
    # 3+5=8 inverts demo_8 and 5+5=10 demo_10 (consistent, now 0.7): it ties with all five
    # inconsistent claims, each pair counting half -> 22.5/25. 13 and 15 invert nothing.
    assert [float(r["auroc"]) for r in rows] == [pytest.approx(0.9), 1.0, pytest.approx(0.9), 1.0]
    assert all(r["auroc_low"] and r["errors"] == "0" and r["total_tokens"] == "100" for r in rows)
    for name in ("summary.md", "heatmap.png", "roc_overlay.png", "sweep.yaml"):
        assert (out / name).is_file()
    cell_config = json.loads((out / names[1] / "config.json").read_text())
    assert cell_config["config"]["agent"]["max_steps"] == 3 and cell_config["config"]["agent"]["docs_per_query"] == 10
    assert "| max_steps | docs_per_query |" in (out / "summary.md").read_text()

    again = Factory()
    resumed = sweep(tmp_path, write_sweep(tmp_path, GRID_2X2), again)
    assert again.opened == [] and all(r.resumed_complete for r in resumed.cells)
    assert [r.metrics["auroc"] for r in resumed.cells] == [r.metrics["auroc"] for r in summary.cells]


def test_named_cells_with_a_limit_of_their_own(tmp_path):
    text = "base:\n  agent.max_steps: 3\ncells:\n  plain: {}\n  hybrid: {retrieval.mode: hybrid}\nlimit:\n  hybrid: 2\n"
    summary = sweep(tmp_path, write_sweep(tmp_path, text), Factory())
    assert [r.cell.name for r in summary.cells] == ["plain", "hybrid"]
    assert [r.cell.config.retrieval.mode for r in summary.cells] == ["dense", "hybrid"]
    assert all(r.cell.config.agent.max_steps == 3 for r in summary.cells)
    assert [r.metrics["counts"]["total"] for r in summary.cells][1] == 2
    assert "| plain | plain |" in (tmp_path / "out" / "summary.md").read_text().replace("[plain](plain/report.md)", "plain")


def test_one_numeric_axis_has_no_heatmap_and_limit_applies(tmp_path):
    text = "grid:\n  rerank: [true, false]\n"
    summary = sweep(tmp_path, write_sweep(tmp_path, text), Factory(), limit=4)
    assert [r.cell.name for r in summary.cells] == ["rerank=true", "rerank=false"]
    assert [r.cell.config.retrieval.rerank for r in summary.cells] == [True, False]
    assert all(r.metrics["counts"]["total"] == 4 for r in summary.cells)
    assert not (tmp_path / "out" / "heatmap.png").exists()
    assert (tmp_path / "out" / "summary.csv").is_file()


def read_fidelity(cell_config):
    """What separates the fidelity cells: search mode, stop rule, snippets, finish(), thoughts, verifier and controller wording."""
    return (cell_config.retrieval.mode, cell_config.agent.stop_on_report, cell_config.agent.snippet_chars,
            cell_config.agent.finish_action, cell_config.agent.thoughts, cell_config.prompts.variants.get("verifier"),
            cell_config.prompts.variants.get("controller"))


@pytest.mark.parametrize(
    ("name", "cells"),
    [
        ("tools_ablation.yaml", {
            "tools=none": ["search", "report_inconsistency"],
            "tools=clarify": ["search", "clarify_entity", "report_inconsistency"],
            "tools=explain": ["search", "explain", "report_inconsistency"],
            "tools=both": ["search", "clarify_entity", "explain", "report_inconsistency"],
        }),
        ("steps_x_docs.yaml", 9),
        ("rerank.yaml", {"rerank=true": True, "rerank=false": False}),
        ("prompt_variants.yaml", {
            "verifier=default,controller=default": {},
            "verifier=default,controller=thorough": {"controller": "thorough"},
            "verifier=strict,controller=default": {"verifier": "strict"},
            "verifier=strict,controller=thorough": {"verifier": "strict", "controller": "thorough"},
        }),
        ("systems.yaml", {"system=claire": "claire", "system=rav": "rav", "system=nli": "nli", "system=cascade": "cascade"}),
        ("fidelity.yaml", {
            "paper": ("dense", True, 0, False, True, "old", None), "hybrid_search": ("hybrid", True, 0, False, True, "old", None),
            "no_rerank": ("dense", True, 0, False, True, "old", None),
            "keep_looking_after_report": ("dense", False, 0, False, True, "old", None),
            "snippets_400": ("dense", True, 400, False, True, "old", None),
            "finish_action": ("dense", True, 0, True, True, "old", None),
            "no_thoughts": ("dense", True, 0, False, False, "old", None),
            "parallel_actions": ("dense", True, 0, False, True, "old", None),
            "lenient_verifier": ("dense", True, 0, False, True, "lenient", None),
            "project_prompts": ("dense", True, 0, False, True, "old", "practical"),
            "practical": ("hybrid", False, 400, True, False, "lenient", "practical"),
        }),
        ("fidelity_small_model.yaml", {  # the same two ends on a small model's budget
            "paper": ("dense", True, 0, False, True, "old", None),
            "practical": ("hybrid", False, 400, True, False, "lenient", "practical"),
        }),
    ],
)
def test_shipped_sweeps_expand(name, cells):
    plan = plan_sweep(SHIPPED / name, Config().with_overrides({"prompts.variants": {"verifier": "old"}}))
    if isinstance(cells, int):
        assert len(plan.cells) == cells
        assert {(c.config.agent.max_steps, c.config.agent.docs_per_query) for c in plan.cells} == {
            (s, d) for s in (3, 5, 10) for d in (5, 10, 15)}
        return
    assert [c.name for c in plan.cells] == list(cells)
    read = {
        "tools_ablation.yaml": lambda c: c.agent.tools,
        "rerank.yaml": lambda c: c.retrieval.rerank,
        "prompt_variants.yaml": lambda c: c.prompts.variants,
        "systems.yaml": lambda c: c.agent.system,
        "fidelity.yaml": read_fidelity,
        "fidelity_small_model.yaml": read_fidelity,
    }[name]
    assert {c.name: read(c.config) for c in plan.cells} == cells


@pytest.mark.parametrize("name", ["fidelity.yaml", "fidelity_small_model.yaml"])
def test_the_practical_cell_is_the_practical_preset(name):
    from claire.config import PRESETS

    cell = next(c for c in plan_sweep(SHIPPED / name, Config()).cells if c.name == "practical").config
    for section, values in PRESETS["practical"].items():
        for key, value in values.items():
            got = getattr(getattr(cell, section), key)
            assert (got if not isinstance(value, dict) else {k: got.get(k) for k in value}) == value, (section, key)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("grid:\n  max_stepz: [1, 2]\n", "'max_stepz' is not a setting name"),
        ("grid:\n  agent.max_steps: [5, 0]\n", "cell max_steps=0: invalid configuration"),
        ("grid:\n  agent.nonsense: [1]\n", "cell nonsense=1: invalid configuration"),
        ("base:\n  llm.temperature: 9\ngrid:\n  max_steps: [1]\n", "base: invalid configuration"),
        ("grid: {}\n", "give either grid"),
        ("grid:\n  max_steps: [1]\ncells:\n  a: {}\n", "give either grid"),
        ("cells:\n  a: {}\nlimit:\n  b: 3\n", "limit names no cell: b"),
        ("grid:\n  max_steps: []\n", "grid.max_steps: needs at least one value"),
        ("name: x\n", "give either grid"),
        ("grid:\n  max_steps: [1\n", "not valid YAML"),
        ("grid:\n  threshold: [0.3]\n", "write this axis as section.field"),
    ],
)
def test_bad_sweep_files_name_the_file_and_the_problem(tmp_path, text, message):
    path = write_sweep(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        plan_sweep(path, Config())
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)
