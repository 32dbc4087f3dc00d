"""Reading finished runs back and putting them side by side: a run's ``metrics.json``, the
comparison table of several runs with deltas, and a sweep's heatmap (matplotlib's object API).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from rich import box
from rich.table import Table

from claire.errors import ConfigError
from claire.runs.predictions import load_predictions, read_run_config
from claire.tasks.citations.records import SupportLabel
from claire.tasks.measures import DASH, METRICS, auroc_text, money, or_dash, pct


def read_metrics(run_dir: str | Path) -> dict[str, Any]:
    """A run directory's metrics.json (a clear error when it has none)."""
    path = Path(run_dir) / METRICS
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{run_dir} has no {METRICS}: run `claire metrics {run_dir}` first") from None
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not readable JSON ({error})") from None


def _with_delta(text: str, delta: float | None) -> str:
    """A score with its difference from the first run on a second line (narrow columns)."""
    return text if delta is None else f"{text}\n({100 * delta:+.1f})"


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


def per_claim_costs(metrics: dict[str, Any]) -> dict[str, float | None]:
    """LLM calls, prompt and completion tokens and seconds per claim of a run, as a fresh run
    would spend them: answers CLAIRE's cache served count with the tokens their first call took
    (``cached_share``: the share of calls the cache served)."""
    total = (metrics.get("counts") or {}).get("total") or 0
    usage = metrics.get("usage") or {}
    if not total:
        return {"calls": None, "prompt_tokens": None, "completion_tokens": None, "seconds": None, "cached_share": None}
    fresh, served = usage.get("calls") or 0, usage.get("cached_calls") or 0
    return {"calls": (fresh + served) / total,
            "prompt_tokens": ((usage.get("prompt_tokens") or 0) + (usage.get("cached_prompt_tokens") or 0)) / total,
            "completion_tokens": ((usage.get("completion_tokens") or 0) + (usage.get("cached_completion_tokens") or 0)) / total,
            "seconds": (metrics.get("latency_s") or {}).get("mean"),
            "cached_share": served / (fresh + served) if served else None}


def cost_cell(usage: dict[str, Any]) -> str:
    """A run's cost for a table: what a fresh run would be billed, and what this run paid when
    CLAIRE's cache served some answers (``$0.41 uncached / $0.09 paid``)."""
    paid, uncached = usage.get("cost_usd"), usage.get("uncached_cost_usd")
    if uncached is None or uncached == paid or not usage.get("cached_calls"):
        return money(paid)
    return f"{money(uncached)} uncached / {money(paid)} paid"


def provider_cached_share(metrics: dict[str, Any]) -> float | None:
    """The share of a run's prompt tokens the provider read from its prompt cache (None when it
    reported none)."""
    usage = metrics.get("usage") or {}
    prompt, read = usage.get("prompt_tokens") or 0, usage.get("cache_read_tokens") or 0
    return read / prompt if prompt and read else None


def _run_labels(dirs: Sequence[str | Path]) -> list[str]:
    """Each run's folder name, or its whole path where two runs share a name."""
    names = [Path(d).name or str(d) for d in dirs]
    return names if len(set(names)) == len(names) else [str(d) for d in dirs]


# Columns left out when every run has nothing to show in them (no errors, no repairs, no cost).
_QUIET_COLUMNS = ("Errors", "All: AUROC/F1", "Repaired", "Bad calls", "Cost")


# Settings that do not change what a system answers: a run may resume with other values.
NEUTRAL_SETTINGS = {
    "eval.concurrency", "llm.max_concurrency", "llm.cache", "llm.refresh_cache", "llm.cache_path", "llm.api_key",
    "llm.api_key_env", "llm.record", "llm.prompt_header", "llm.timeout", "llm.max_attempts", "llm.retry_base_wait", "llm.retry_max_wait", "llm.stream",
    "llm.openai_client", "retrieval.qdrant_api_key", "retrieval.path", "agent.review", "retrieval.lock_timeout",
    "agent.max_fact_chars", "agent.calibration",
    "watch.stream_url", "watch.replay", "watch.api_url", "watch.wikis", "watch.namespaces", "watch.include_bots",
    "watch.titles", "watch.categories", "watch.edits_in_flight", "watch.index_every", "watch.user_agent",
    "llm.base_url",  # the same model served from another address (a fixed endpoint) may finish a run
    "preset",  # a name for the settings, which are compared one by one
}


def comparison(dirs: Sequence[str | Path]) -> tuple[list[str], list[dict[str, str]], list[str]]:
    """Runs side by side: the columns worth showing, one row of cells per run (×100, differences
    from the first run in brackets), and the notes that go under them (what every run shares, the
    settings in which the runs differ, claims that differ)."""
    if not dirs:
        raise ConfigError("compare needs at least one run directory")
    tasks = {read_metrics(run_dir).get("task") for run_dir in dirs}
    if tasks == {"citations"}:
        return citation_comparison(dirs)
    if "citations" in tasks:
        raise ConfigError("compare runs of one task: citation runs are not scored like WikiCollide runs")
    rows = comparison_rows(dirs)
    columns = ("Run", "System", "Split", "Scored", "AUROC (95% CI)", "Acc", "P", "R", "F1", "Errors", "All: AUROC/F1", "Repaired",
               "Bad calls", "Calls", "Tokens", "Seconds", "Cost")
    cells: list[dict[str, str]] = []
    labels = _run_labels(dirs)
    for label, row in zip(labels, rows):
        m, delta = row["metrics"], row["delta"]
        per_claim = per_claim_costs(m)
        robust = m.get("robustness") or {}
        values = [
            label,
            m.get("system") or DASH,
            m.get("split") or DASH,
            f"{m['counts']['scored']}/{m['counts']['total']}",
            _with_delta(auroc_text(m).replace(" (", "\n(", 1), delta["auroc"]),
            *(_with_delta(pct(m.get(k)), delta[k]) for k in ("accuracy", "precision", "recall", "f1")),
            str(m["counts"]["errors"]),
            f"{pct(full['auroc'])}/{pct(full['f1'])}" if (full := m.get("full_set")) else DASH,
            str(robust.get("repaired_or_reasked", DASH)),
            str(robust.get("invalid_or_repeated_calls", DASH)),
            or_dash(per_claim["calls"], ",.1f") + (f"\n({served:.0%} reused)" if (served := per_claim["cached_share"]) else ""),
            f"{or_dash(per_claim['prompt_tokens'], ',.0f')}+{or_dash(per_claim['completion_tokens'], ',.0f')}"
            + (f"\n({share:.0%} cached)" if (share := provider_cached_share(m)) else ""),
            or_dash(per_claim["seconds"], ",.1f"),
            cost_cell(m["usage"]).replace(" / ", "\n"),
        ]
        cells.append(dict(zip(columns, values)))
    # What every run shares goes under the table rather than in a column of repeats.
    quiet = [c for c in _QUIET_COLUMNS if all(row[c] in ("0", DASH) for row in cells)]
    splits = {row["Split"] for row in cells}
    if len(splits) == 1:
        quiet.append("Split")
    if all(row["Run"] == row["System"] for row in cells):
        quiet.append("System")
    shown = [c for c in columns if c not in quiet]
    notes = ["Calls, tokens (prompt+completion) and seconds are per claim, answers reused from CLAIRE's cache "
             "included (as a fresh run would send them; \"reused\": their share of the calls); \"cached\": the share of "
             "prompt tokens the provider served from its prompt cache; cost: what a fresh run would be billed, and what "
             "the run paid."]
    if "All: AUROC/F1" not in quiet:
        notes.append("All: AUROC and F1 over every claim, one that ended in an error counted as consistent (score 0), "
                     "as the paper's tables cover every claim; the other scores leave errors out.")
    if "Split" in quiet:
        notes.append(f"Split: {splits.pop()}.")
    silent = [c for c in quiet if c in _QUIET_COLUMNS]
    if silent:
        notes.append("Every run: " + ", ".join(f"{c.lower()} {DASH if c == 'Cost' else 0}" for c in silent) + ".")
    settings = setting_differences(dirs, labels)
    if settings:
        notes.append("Settings that differ: " + "; ".join(settings) + ".")
    if any(row["claim_ids"] != rows[0]["claim_ids"] for row in rows):
        notes.append("Warning: these runs cover different claims, so their differences are not like for like.")
    return shown, cells, notes


def citation_comparison(dirs: Sequence[str | Path]) -> tuple[list[str], list[dict[str, str]], list[str]]:
    """Citation runs side by side: the answers against the gold labels (exact and binary accuracy,
    macro F1 and the F1 of each label; brackets: difference from the first run), how often the
    original source is ranked first, errors and cost."""
    labels = [str(label) for label in SupportLabel]
    columns = ["Run", "Labelled", "Exact acc", "Binary acc", "Macro F1", *[f"F1 {label}" for label in labels],
               "Original first", "Errors", "Cost"]
    first: dict[str, float | None] = {}
    cells = []
    for index, (label, run_dir) in enumerate(zip(_run_labels(dirs), dirs)):
        m = read_metrics(run_dir)
        scores = m.get("labels") or {}
        values = {"exact": scores.get("exact_accuracy"), "binary": scores.get("binary_accuracy"),
                  "macro": scores.get("macro_f1"),
                  **{name: ((scores.get("per_class") or {}).get(name) or {}).get("f1") for name in labels}}
        if index == 0:
            first = values
        delta = {key: None if index == 0 or value is None or first.get(key) is None else value - first[key]
                 for key, value in values.items()}
        cells.append(dict(zip(columns, [
            label, str(scores.get("records", DASH)),
            *(_with_delta(pct(values[key]), delta[key]) for key in ("exact", "binary", "macro", *labels)),
            pct(m.get("original_ranks_first")), str(m.get("errors", DASH)), cost_cell(m.get("usage") or {}),
        ])))
    quiet = [c for c in ("Errors", "Cost") if all(row[c] in ("0", DASH) for row in cells)]
    notes = ["Scores ×100 against the gold labels: exact accuracy over the four labels, binary accuracy (supported "
             "or not), the F1 of each label and their mean over the labels the data has; a record that ended in an "
             "error counts as a wrong answer. Original first: how often the verifier ranks the cited source first."]
    settings = setting_differences(dirs, _run_labels(dirs))
    if settings:
        notes.append("Settings that differ: " + "; ".join(settings) + ".")
    return [c for c in columns if c not in quiet], cells, notes


def setting_differences(dirs: Sequence[str | Path], labels: Sequence[str]) -> list[str]:
    """The settings (dotted keys) whose values differ between the runs, each with every run's value
    (the system, set apart as its own column, and neutral settings such as concurrency left out)."""
    from claire.agent.registry import needs_llm

    flat = []
    for directory in dirs:
        stored = read_run_config(directory) or {}
        settings = flat_settings(stored.get("config") or {})
        if not needs_llm(stored.get("system") or settings.get("agent.system")):  # it read no llm.* setting
            settings = {key: (None if key.startswith("llm.") else value) for key, value in settings.items()}
        flat.append(settings)
    keys = sorted({key for run in flat for key in run})
    found = []
    for key in keys:
        values = [run.get(key) for run in flat]
        if key in NEUTRAL_SETTINGS or key in ("agent.system", "prompts_digest") or len({repr(v) for v in values}) == 1:
            continue
        found.append(f"{key} (" + ", ".join(f"{label}: {_short(value)}" for label, value in zip(labels, values)) + ")")
    return found


def flat_settings(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A configuration's settings as dotted keys (``retrieval.rerank``); ``prompts.variants`` stays one value."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "variants":
            flat.update(flat_settings(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _short(value: Any) -> str:
    text = "—" if value is None else json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:39] + "…"


def compare_runs(dirs: Sequence[str | Path]) -> Table:
    """Runs side by side as a terminal table (see :func:`comparison`)."""
    shown, cells, notes = comparison(dirs)
    table = Table(title="Runs compared (scores ×100; brackets: difference from the first run)", box=box.SIMPLE_HEAD)
    for column in shown:
        table.add_column(column, justify="left" if column in ("Run", "System", "Split") else "right",
                         no_wrap=column in ("Run", "System", "Scored", "Seconds"))
    for row in cells:
        table.add_row(*(row[c] for c in shown))
    table.caption = " ".join(notes)
    return table


def compare_text(dirs: Sequence[str | Path], fmt: str) -> str:
    """Runs side by side as Markdown (a table and its notes) or CSV (every column, one line a run)."""
    shown, cells, notes = comparison(dirs)
    flat = [{c: row[c].replace("\n", " ") for c in row} for row in cells]
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(flat[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat)
        return buffer.getvalue()
    lines = ["Runs compared (scores ×100; brackets: difference from the first run)", "",
             "| " + " | ".join(shown) + " |", "|" + "|".join("---" for _ in shown) + "|"]
    lines += ["| " + " | ".join(row[c].replace("|", "/") for c in shown) + " |" for row in flat]
    return "\n".join(lines + [""] + notes) + "\n"


def compare_blocks(dirs: Sequence[str | Path]) -> str:
    """Runs side by side for a narrow terminal: one block a run, a line a measure."""
    shown, cells, notes = comparison(dirs)
    lines = ["Runs compared (scores ×100; brackets: difference from the first run)"]
    for row in cells:
        lines += ["", row["Run"]] + [f"  {c}: {row[c].replace(chr(10), ' ')}" for c in shown if c != "Run"]
    return "\n".join(lines + [""] + notes) + "\n"


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
