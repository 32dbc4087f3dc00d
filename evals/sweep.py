"""Ablation sweeps: a grid of configuration overrides, each cell a resumable evaluation run.

A sweep file (YAML)::

    name: steps_x_docs            # optional; the file name otherwise
    base: {agent.system: claire}  # overrides every cell shares
    grid:                         # the cells are the cross product of these axes
      max_steps: [3, 5, 10]
      docs_per_query: [5, 10, 15]
      tools:                      # an axis may name its values
        none: [search, report_inconsistency]
        clarify: [search, clarify_entity, report_inconsistency]

Instead of a grid, ``cells`` names each configuration outright (one cell per entry, each a map of
overrides; the cells form one axis, ``variant``) — for comparing one baseline with a set of
single changes::

    cells:
      paper: {}
      hybrid: {retrieval.mode: hybrid}
      early_stop: {agent.stop_on_report: true}
    limit: {claire: 6}            # optional: at most N claims for the named cells

Keys are dotted settings (``agent.max_steps``), a bare setting name that only one section has
(``max_steps``, ``rerank``, ``model``, ``system``, ``tools``...), or ``prompts.variants.TEMPLATE`` (also spelt ``prompt_variant.TEMPLATE``)
(a prompt variant; ``default`` means none). Each cell runs in ``OUT/<cell name>/``; all cells
share the LLM cache. The sweep writes summary.csv, summary.md, heatmap.png (AUROC over the
first two numeric axes) and roc_overlay.png.
"""

from __future__ import annotations

import csv
import itertools
import re
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console

from claire.agent.system import System
from claire.config import SECTIONS, Config
from claire.errors import ConfigError
from claire.runs.predictions import load_predictions, read_run_config
from claire.evals.reporting import cost_cell, per_claim_costs, plot_heatmap, read_metrics
from claire.evals.runner import config_differences, pending_claims, run_eval
from claire.tasks.measures import DASH, auroc_text, or_dash, pct
from claire.domain import Claim
from claire.agent.runtime import check_pairing
from claire.tasks.registry import get_task
from claire.agent.runtime import run_settings

SystemFactory = Callable[[Config], AbstractAsyncContextManager[System]]
VARIANT_PREFIX = "prompt_variant."
CELLS_AXIS = "variant"
COLUMNS = ("claims", "scored", "errors", "auroc", "auroc_low", "auroc_high", "accuracy", "precision", "recall", "f1",
           "threshold", "total_tokens", "cost_usd", "uncached_cost_usd", "wall_time_s", "repaired_or_reasked", "invalid_or_repeated_calls",
           "calls_per_claim", "prompt_tokens_per_claim", "completion_tokens_per_claim", "seconds_per_claim")


class SweepFile(BaseModel):
    """A sweep file's contents, validated."""
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    base: dict[str, Any] = {}
    grid: dict[str, list[Any] | dict[str, Any]] = {}
    cells: dict[str, dict[str, Any]] = {}
    limit: dict[str, int] = {}


@dataclass
class Axis:
    """One axis of a sweep's grid: a setting and its values."""
    key: str  # as written in the sweep file
    label: str  # its short name in cell names and columns
    values: list[tuple[str, Any]]  # (label, value)

    @property
    def numeric(self) -> bool:
        """Whether every value of the axis is a number (a heatmap axis)."""
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for _, v in self.values)


@dataclass
class Cell:
    """One cell of a sweep: its labels, values and resolved configuration."""
    name: str  # e.g. "max_steps=5,docs_per_query=10"
    dir_name: str
    labels: dict[str, str]  # axis label -> value label
    values: dict[str, Any]  # axis label -> value
    config: Config
    limit: int | None = None  # at most this many claims (the sweep file's ``limit``)


@dataclass
class SweepPlan:
    """A sweep's axes and cells."""
    name: str
    axes: list[Axis]
    cells: list[Cell]


@dataclass
class CellResult:
    """A finished cell and its metrics."""
    cell: Cell
    out_dir: Path
    metrics: dict[str, Any]
    resumed_complete: bool  # the cell was already finished; nothing was run


@dataclass
class SweepSummary:
    """A finished sweep."""
    name: str
    out_dir: Path
    axes: list[Axis]
    cells: list[CellResult]
    wall_time_s: float


def _dotted(key: str, where: str) -> str:
    if "." in key:
        return key
    sections = [name for name in SECTIONS if key in Config.model_fields[name].annotation.model_fields]  # type: ignore[union-attr]
    if len(sections) != 1:
        raise ConfigError(
            f"{where}: '{key}' is not a setting name; write it as section.field (e.g. agent.max_steps) "
            f"or {VARIANT_PREFIX}TEMPLATE"
        )
    return f"{sections[0]}.{key}"


def apply_overrides(config: Config, overrides: dict[str, Any], where: str) -> Config:
    """``config`` with sweep-style overrides (dotted, bare or prompt_variant keys) applied."""
    dotted: dict[str, Any] = {}
    variants = dict(config.prompts.variants)
    for key, value in overrides.items():
        if key.startswith(VARIANT_PREFIX):
            template = key[len(VARIANT_PREFIX):]
            if value in (None, "default"):
                variants.pop(template, None)
            else:
                variants[template] = str(value)
        else:
            dotted[_dotted(key, where)] = value
    if variants != config.prompts.variants:
        dotted["prompts.variants"] = variants
    try:
        return config.with_overrides(dotted)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return "+".join(_label(v) for v in value) or "none"
    return str(value)


def _read(sweep_file: Path) -> SweepFile:
    try:
        data = yaml.safe_load(sweep_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"sweep file {sweep_file} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read sweep file {sweep_file}: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{sweep_file}: not valid YAML: {error}") from None
    try:
        spec = SweepFile.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"{sweep_file}: {problems} (expected keys: name, base, grid or cells, limit)") from None
    if bool(spec.grid) == bool(spec.cells):
        raise ConfigError(f"{sweep_file}: give either grid (axes with lists of values) or cells (named overrides)")
    return spec


def plan_sweep(sweep_file: str | Path, base_config: Config) -> SweepPlan:
    """Read a sweep file and build every cell's configuration (all validated before any run)."""
    sweep_file = Path(sweep_file)
    spec = _read(sweep_file)
    base = apply_overrides(base_config, spec.base, f"{sweep_file}: base")
    grid: dict[str, Any] = spec.grid or {CELLS_AXIS: spec.cells}
    short = [key.rsplit(".", 1)[-1] for key in grid]
    axes = []
    for key, values in grid.items():
        pairs = [(str(k), v) for k, v in values.items()] if isinstance(values, dict) else [(_label(v), v) for v in values]
        if not pairs:
            raise ConfigError(f"{sweep_file}: grid.{key}: needs at least one value")
        label = key.rsplit(".", 1)[-1]
        if short.count(label) > 1 or label in ("cell", *COLUMNS):
            label = key
        if label in ("cell", *COLUMNS):
            raise ConfigError(f"{sweep_file}: grid.{key}: write this axis as section.field (e.g. agent.{key})")
        axes.append(Axis(key, label, pairs))
    cells, seen = [], {}
    for combination in itertools.product(*(axis.values for axis in axes)):
        name = ",".join(f"{axis.label}={label}" for axis, (label, _) in zip(axes, combination))
        if spec.cells:
            name = combination[0][0]
            overrides = dict(combination[0][1] or {})
        else:
            overrides = {axis.key: value for axis, (_, value) in zip(axes, combination)}
        config = apply_overrides(base, overrides, f"{sweep_file}: cell {name}")
        dir_name = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", name)
        if dir_name in seen:
            raise ConfigError(f"{sweep_file}: cells {seen[dir_name]} and {name} would share the directory {dir_name}")
        seen[dir_name] = name
        cells.append(Cell(
            name=name,
            dir_name=dir_name,
            labels={axis.label: label for axis, (label, _) in zip(axes, combination)},
            values={axis.label: value for axis, (_, value) in zip(axes, combination)},
            config=config,
            limit=spec.limit.get(name),
        ))
    unknown = sorted(set(spec.limit) - {cell.name for cell in cells})
    if unknown:
        raise ConfigError(f"{sweep_file}: limit names no cell: {', '.join(unknown)}")
    for cell in cells:  # every cell's system loads before the first call of the first cell
        try:
            check_pairing(cell.config.agent.system, get_task(cell.config.agent.task))
        except ConfigError as error:
            raise ConfigError(f"{sweep_file}: cell {cell.name}: {error}") from None
    return SweepPlan(name=spec.name or sweep_file.stem, axes=axes, cells=cells)


def _is_complete(claims: list[Claim], cell_dir: Path, system: str, retry_errors: bool, config_public: dict) -> bool:
    config = read_run_config(cell_dir)
    return (
        config is not None
        and config.get("system") == system
        and not config_differences(config.get("config"), config_public)
        and (cell_dir / "metrics.json").exists()
        and not pending_claims(claims, cell_dir, retry_errors=retry_errors)
    )


async def run_sweep(
    sweep_file: Path,
    *,
    dataset: Path,
    out_dir: Path,
    base_config: Config,
    make_system: SystemFactory,
    limit: int | None = None,
    concurrency: int | None = None,
    retry_errors: bool = False,
    show_progress: bool = True,
    console: Console | None = None,
) -> SweepSummary:
    """Run every cell of a sweep (resuming finished and partial cells) and write its summary."""
    plan = plan_sweep(sweep_file, base_config)
    tasks = {get_task(cell.config.agent.task) for cell in plan.cells}
    if any(not task.sweepable for task in tasks):
        raise ConfigError("sweeps score WikiCollide runs (AUROC) only; for --task feverous run `claire eval` once per configuration")
    claims = next(iter(tasks)).load_claims(dataset)[:limit]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sweep.yaml").write_text(Path(sweep_file).read_text(encoding="utf-8"), encoding="utf-8")
    console = console or Console(quiet=not show_progress)
    start = time.perf_counter()
    results = []
    all_claims = claims
    for index, cell in enumerate(plan.cells, start=1):
        claims = all_claims[: cell.limit] if cell.limit else all_claims
        cell_dir = out_dir / cell.dir_name
        console.print(f"[bold]{plan.name}[/] cell {index}/{len(plan.cells)}: {cell.name}")
        if _is_complete(claims, cell_dir, cell.config.agent.system, retry_errors, run_settings(cell.config)):
            results.append(CellResult(cell, cell_dir, read_metrics(cell_dir), resumed_complete=True))
            continue
        async with make_system(cell.config) as system:
            summary = await run_eval(
                claims,
                system,
                cell_dir,
                concurrency=concurrency or cell.config.eval.concurrency,
                config_public=run_settings(cell.config),
                retry_errors=retry_errors,
                dataset=dataset,
                show_progress=show_progress,
                console=console,
            )
        results.append(CellResult(cell, cell_dir, summary.metrics, resumed_complete=False))
    sweep = SweepSummary(plan.name, out_dir, plan.axes, results, time.perf_counter() - start)
    write_sweep_outputs(sweep)
    return sweep


def _row(result: CellResult) -> dict[str, Any]:
    m = result.metrics
    ci = m.get("auroc_ci95") or [None, None]
    return {
        "claims": m["counts"]["total"],
        "scored": m["counts"]["scored"],
        "errors": m["counts"]["errors"],
        "auroc": m["auroc"],
        "auroc_low": ci[0],
        "auroc_high": ci[1],
        "accuracy": m["accuracy"],
        "precision": m["precision"],
        "recall": m["recall"],
        "f1": m["f1"],
        "threshold": m["threshold"],
        "total_tokens": m["usage"]["total_tokens"],
        "cost_usd": m["usage"]["cost_usd"],
        "wall_time_s": m.get("wall_time_s"),
        "repaired_or_reasked": (m.get("robustness") or {}).get("repaired_or_reasked"),
        "invalid_or_repeated_calls": (m.get("robustness") or {}).get("invalid_or_repeated_calls"),
        "uncached_cost_usd": m["usage"].get("uncached_cost_usd", m["usage"]["cost_usd"]),
        **{f"{key}_per_claim": value for key, value in per_claim_costs(m).items() if key != "cached_share"},
    }


def _write_heatmap(sweep: SweepSummary, path: Path) -> bool:
    numeric = [axis for axis in sweep.axes if axis.numeric]
    if len(numeric) < 2:
        return False
    y_axis, x_axis = numeric[:2]
    others = [axis.label for axis in sweep.axes if axis not in (y_axis, x_axis)]
    grid: list[list[float | None]] = []
    for _, y_value in y_axis.values:
        row = []
        for _, x_value in x_axis.values:
            scores = [
                r.metrics["auroc"] for r in sweep.cells
                if r.cell.values[y_axis.label] == y_value and r.cell.values[x_axis.label] == x_value
                and r.metrics["auroc"] is not None
            ]
            row.append(sum(scores) / len(scores) if scores else None)
        grid.append(row)
    title = f"AUROC — {sweep.name}" + (f" (mean over {', '.join(others)})" if others else "")
    plot_heatmap(
        grid,
        rows=(y_axis.label, [label for label, _ in y_axis.values]),
        columns=(x_axis.label, [label for label, _ in x_axis.values]),
        path=path,
        title=title,
    )
    return True


def write_sweep_outputs(sweep: SweepSummary) -> None:
    """summary.csv, summary.md, heatmap.png (two numeric axes or more) and roc_overlay.png."""
    labels = [axis.label for axis in sweep.axes]
    with open(sweep.out_dir / "summary.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["cell", *labels, *COLUMNS])
        writer.writeheader()
        for result in sweep.cells:
            writer.writerow({"cell": result.cell.name, **result.cell.labels, **_row(result)})
    heatmap = _write_heatmap(sweep, sweep.out_dir / "heatmap.png")
    overlay = get_task(sweep.cells[0].cell.config.agent.task if sweep.cells else None).plot_runs(
        [(f"{r.cell.name} ({pct(r.metrics['auroc'])})", load_predictions(r.out_dir)) for r in sweep.cells],
        sweep.out_dir / "roc_overlay.png",
        title=f"ROC — {sweep.name}",
    )
    lines = [
        f"# Sweep `{sweep.name}`",
        "",
        f"{len(sweep.cells)} cells; scores ×100; AUROC with its bootstrap 95% interval. "
        f"Each cell's run directory holds its config, predictions and report. Calls and tokens per claim count "
        f"the answers CLAIRE's cache served with the tokens their first call took, as a fresh run would send "
        f"them; cost is what a fresh run would be billed (uncached) and what this run paid.",
        "",
        "| Cell | " + " | ".join(labels) + " | AUROC (95% CI) | Acc | F1 | Scored | Errors | Repaired or re-asked "
        "| Invalid or repeated calls | Calls/claim | Tokens/claim (prompt+completion) | s/claim | Cost |",
        "|---|" + "---|" * len(labels) + "---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in sweep.cells:
        m = result.metrics
        row = _row(result)
        cost = cost_cell(m["usage"])
        tokens = (DASH if row["prompt_tokens_per_claim"] is None else
                  f"{row['prompt_tokens_per_claim']:,.0f}+{row['completion_tokens_per_claim']:,.0f}")
        lines.append(
            f"| [{result.cell.name}]({result.cell.dir_name}/report.md) | "
            + " | ".join(result.cell.labels[label] for label in labels)
            + f" | {auroc_text(m)} | {pct(m['accuracy'])} | {pct(m['f1'])} | {m['counts']['scored']}/{m['counts']['total']}"
            f" | {m['counts']['errors']} | {or_dash(row['repaired_or_reasked'])} | {or_dash(row['invalid_or_repeated_calls'])}"
            f" | {or_dash(row['calls_per_claim'], '.1f')} | {tokens} | {or_dash(row['seconds_per_claim'], '.1f')} | {cost} |"
        )
    ranked = [r for r in sweep.cells if r.metrics["auroc"] is not None]
    if ranked:
        top = max(r.metrics["auroc"] for r in ranked)
        best = [r for r in ranked if r.metrics["auroc"] == top]
        if len(best) == len(ranked) > 1:
            lines += ["", f"Every cell has the same AUROC ({auroc_text(best[0].metrics)}): no cell stands out."]
        elif len(best) > 1:
            lines += ["", f"Highest AUROC, tied: {', '.join(f'**{r.cell.name}**' for r in best)} ({auroc_text(best[0].metrics)})."]
        else:
            lines += ["", f"Highest AUROC: **{best[0].cell.name}** ({auroc_text(best[0].metrics)})."]
    lines.append("")
    if heatmap:
        lines += ["![AUROC heatmap](heatmap.png)", ""]
    if overlay:
        lines += ["![ROC curves of all cells](roc_overlay.png)", ""]
    (sweep.out_dir / "summary.md").write_text("\n".join(lines), encoding="utf-8")
