"""What a person reads after a run: ``metrics.json``, ``report.md``, ROC plots and comparisons.

The report puts a run beside the paper's numbers for the same split (Table 3 of "Detecting
Corpus-Level Knowledge Inconsistencies in Wikipedia with Large Language Models", EMNLP 2025,
GPT-4o; only AUROC is quoted). Plots use matplotlib's object API (Agg), never pyplot state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from rich.table import Table

from claire.errors import ConfigError
from claire.evals.metrics import roc_points
from claire.evals.predictions import PREDICTIONS, load_predictions, write_atomically

METRICS = "metrics.json"
REPORT = "report.md"
ROC = "roc.png"
PAPER = (
    "Detecting Corpus-Level Knowledge Inconsistencies in Wikipedia with Large Language Models "
    "(EMNLP 2025), Table 3, GPT-4o"
)
# AUROC x100 by system and split, as published.
PAPER_AUROC = {
    "claire": ("CLAIRE", {"validation": 80.9, "test": 75.1}),
    "rav": ("retrieve-and-verify", {"validation": 78.5, "test": 73.0}),
    "nli": ("NLI pipeline", {"validation": 78.4, "test": 72.2}),
}
DASH = "—"


def pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}"


def auroc_text(metrics: dict[str, Any]) -> str:
    ci = metrics.get("auroc_ci95")
    text = pct(metrics.get("auroc"))
    return f"{text} ({pct(ci[0])}–{pct(ci[1])})" if ci else text


def _money(value: float | None) -> str:
    return DASH if value is None else f"${value:,.4f}"


def _seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:,.2f} s"


def _results_table(metrics: dict[str, Any]) -> list[str]:
    system = metrics.get("system") or "?"
    split = metrics.get("split")
    rows = [
        "| System | Split | AUROC (95% CI) | Acc | P | R | F1 |",
        "|---|---|---|---|---|---|---|",
        f"| **{system}** (this run) | {split or DASH} | {auroc_text(metrics)} | {pct(metrics['accuracy'])} "
        f"| {pct(metrics['precision'])} | {pct(metrics['recall'])} | {pct(metrics['f1'])} |",
    ]
    for key, (name, figures) in PAPER_AUROC.items():
        marker = " ◀" if key == system else ""
        for paper_split in [split] if split in figures else list(figures):
            rows.append(f"| {name} — paper{marker} | {paper_split} | {figures[paper_split]:.1f} | {DASH} | {DASH} | {DASH} | {DASH} |")
    return rows


def render_report(metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> str:
    counts = metrics["counts"]
    lines = [
        f"# Evaluation of `{metrics.get('system') or '?'}`" + (f" on the {metrics['split']} split" if metrics.get("split") else ""),
        "",
        f"Covers {metrics['covers']}. Threshold {metrics['threshold']:g}"
        + (f" ({metrics['threshold_source']})" if metrics.get("threshold_source") else "")
        + "; a score at or above it means *inconsistent*. Scores are ×100.",
        "",
    ]
    for key in ("note", "threshold_hint"):
        if metrics.get(key):
            lines += [f"> **Note:** {metrics[key]}", ""]
    lines += _results_table(metrics)
    lines += ["", f"Reference: {PAPER}. The paper reports AUROC only in this summary; other cells show {DASH}.", ""]
    if metrics.get("confusion"):
        c = metrics["confusion"]
        lines += [
            "## Confusion matrix",
            "",
            "| gold \\ predicted | inconsistent | consistent |",
            "|---|---|---|",
            f"| inconsistent | {c['tp']} | {c['fn']} |",
            f"| consistent | {c['fp']} | {c['tn']} |",
            "",
        ]
    if metrics["recall_by_type"]:
        lines += ["## Recall by inconsistency type", "", "| Type | n | Detected | Recall |", "|---|---|---|---|"]
        lines += [
            f"| {name} | {row['n']} | {row['detected']} | {pct(row['recall'])} |"
            for name, row in metrics["recall_by_type"].items()
        ]
        lines.append("")
    failed = [p for p in predictions if p.get("error")]
    lines += ["## Errors", "", f"{counts['errors']} claim(s) ended in an error." if failed else "None.", ""]
    lines += [f"- `{p['claim_id']}`: {str(p['error']).splitlines()[0][:300]}" for p in failed[:50]]
    if len(failed) > 50:
        lines.append(f"- … and {len(failed) - 50} more (see {PREDICTIONS})")
    if failed:
        lines.append("")
    usage, latency = metrics["usage"], metrics["latency_s"]
    lines += [
        "## Usage",
        "",
        f"- LLM calls: {usage['calls']:,} (+{usage['cached_calls']:,} from cache)",
        f"- Tokens: {usage['total_tokens']:,} ({usage['prompt_tokens']:,} prompt, {usage['completion_tokens']:,} completion)",
        f"- Cost: {_money(usage['cost_usd'])}",
        f"- Latency per claim: mean {_seconds(latency['mean'])}, p50 {_seconds(latency['p50'])}, p95 {_seconds(latency['p95'])}",
        f"- Wall time: {_seconds(metrics.get('wall_time_s'))} (sum of claim latencies {_seconds(latency['sum'])})",
        "",
    ]
    if metrics.get("auroc") is not None:
        lines += [f"![ROC curve]({ROC})", ""]
    return "\n".join(lines)


def plot_roc(curves: Sequence[tuple[str, list[dict[str, Any]]]], path: Path, *, title: str = "ROC") -> bool:
    """Draw one ROC curve per (label, predictions); curves without both labels are left out.
    Returns whether anything was drawn (and the file written)."""
    figure = Figure(figsize=(5.5, 5), layout="constrained")
    axes = figure.subplots()
    drawn = 0
    for label, predictions in curves:
        points = roc_points(predictions)
        if points is not None:
            axes.plot(*points, linewidth=1.6, label=label)
            drawn += 1
    if not drawn:
        return False
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8)
    axes.set(xlabel="False positive rate", ylabel="True positive rate (inconsistent)", title=title, xlim=(0, 1), ylim=(0, 1.01))
    axes.legend(loc="lower right", fontsize="small")
    figure.savefig(path, dpi=120)
    return True


def write_run_outputs(out_dir: str | Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """Write metrics.json, report.md and (when AUROC is defined) roc.png into a run directory."""
    out_dir = Path(out_dir)
    write_atomically(out_dir / METRICS, json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    write_atomically(out_dir / REPORT, render_report(metrics, predictions))
    roc = out_dir / ROC
    label = f"{metrics.get('system') or 'run'} (AUROC {pct(metrics.get('auroc'))})"
    if not plot_roc([(label, predictions)], roc, title=f"ROC — {metrics.get('system') or out_dir.name}"):
        roc.unlink(missing_ok=True)


def read_metrics(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / METRICS
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{run_dir} has no {METRICS}: run `claire metrics {run_dir}` first") from None
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not readable JSON ({error})") from None


def _with_delta(text: str, delta: float | None) -> str:
    return text if delta is None else f"{text} ({100 * delta:+.1f})"


def comparison_rows(dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per run directory: its metrics and the differences from the first run."""
    rows = []
    for run_dir in dirs:
        metrics = read_metrics(run_dir)
        rows.append({
            "run": str(run_dir),
            "metrics": metrics,
            "claim_ids": {p["claim_id"] for p in load_predictions(run_dir)},
        })
    first = rows[0]["metrics"] if rows else {}
    for index, row in enumerate(rows):
        metrics = row["metrics"]
        row["delta"] = {
            key: None if index == 0 or metrics.get(key) is None or first.get(key) is None else metrics[key] - first[key]
            for key in ("auroc", "accuracy", "precision", "recall", "f1")
        }
    return rows


def compare_runs(dirs: Sequence[str | Path]) -> Table:
    """Runs side by side (×100, differences from the first run in brackets)."""
    if not dirs:
        raise ConfigError("compare needs at least one run directory")
    rows = comparison_rows(dirs)
    table = Table(title="Runs compared (scores ×100; brackets: difference from the first run)")
    for column in ("Run", "System", "Split", "Scored", "AUROC (95% CI)", "Acc", "P", "R", "F1", "Errors", "Tokens", "Cost"):
        table.add_column(column, justify="left" if column in ("Run", "System", "Split") else "right")
    for row in rows:
        m, delta = row["metrics"], row["delta"]
        table.add_row(
            row["run"],
            m.get("system") or DASH,
            m.get("split") or DASH,
            f"{m['counts']['scored']}/{m['counts']['total']}",
            _with_delta(auroc_text(m), delta["auroc"]),
            *(_with_delta(pct(m.get(k)), delta[k]) for k in ("accuracy", "precision", "recall", "f1")),
            str(m["counts"]["errors"]),
            f"{m['usage']['total_tokens']:,}",
            _money(m["usage"]["cost_usd"]),
        )
    if any(row["claim_ids"] != rows[0]["claim_ids"] for row in rows):
        table.caption = "Warning: these runs cover different claims, so their differences are not like for like."
    return table


def plot_heatmap(
    values: list[list[float | None]],
    *,
    rows: tuple[str, list[str]],
    columns: tuple[str, list[str]],
    path: Path,
    title: str,
) -> None:
    """A labelled heatmap of scores in [0, 1] shown ×100 (rows × columns; None is left blank)."""
    figure = Figure(figsize=(1.2 * len(columns[1]) + 2.5, 1.0 * len(rows[1]) + 1.8), layout="constrained")
    axes = figure.subplots()
    grid = [[float("nan") if v is None else 100 * v for v in row] for row in values]
    image = axes.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:  # not NaN
                ink = "black" if image.norm(value) > 0.6 else "white"
                axes.text(j, i, f"{value:.1f}", ha="center", va="center", color=ink, fontsize="small")
    axes.set_xticks(range(len(columns[1])), columns[1])
    axes.set_yticks(range(len(rows[1])), rows[1])
    axes.set(xlabel=columns[0], ylabel=rows[0], title=title)
    figure.colorbar(image, ax=axes, label="AUROC ×100")
    figure.savefig(path, dpi=120)
