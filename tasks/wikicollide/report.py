"""What a person reads after a WikiCollide run: ``metrics.json``, ``report.md`` and ``roc.png``.

The report puts a run beside the paper's numbers for the same split (Table 3 of "Detecting
Corpus-Level Knowledge Inconsistencies in Wikipedia with Large Language Models", EMNLP 2025,
GPT-4o: AUROC, accuracy and F1). Plots use matplotlib's object API (Agg), never pyplot state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from claire.settings import PAPER_MODEL
from claire.files import strict_json, write_atomically
from claire.usage import EVENTS
from claire.prompts.fidelity import counts as fidelity_counts, markdown_table, side_by_side
from claire.tasks.measures import CALIBRATION, DASH, METRICS, PREDICTIONS, REPORT, ROC, auroc_text, cost_summary, pct, seconds, token_summary
from claire.tasks.wikicollide.scoring import roc_points

PAPER = (
    "Detecting Corpus-Level Knowledge Inconsistencies in Wikipedia with Large Language Models "
    "(EMNLP 2025), Table 3, GPT-4o"
)
# (AUROC, accuracy, F1) x100 by system and split, as published in Table 3 (precision and recall
# are not given there).
PAPER_FIGURES = {
    "claire": ("CLAIRE", {"validation": (80.9, 76.5, 67.4), "test": (75.1, 69.3, 69.6)}),
    "rav": ("retrieve-and-verify", {"validation": (78.5, 73.6, 65.2), "test": (73.0, 69.0, 69.7)}),
    "nli": ("NLI pipeline", {"validation": (78.4, 74.0, 66.5), "test": (72.2, 67.0, 70.2)}),
}
PAPER_AUROC = {key: (name, {split: row[0] for split, row in figures.items()}) for key, (name, figures) in PAPER_FIGURES.items()}
"""AUROC x100 alone, by system and split."""

PAPER_EMBEDDER = "Alibaba-NLP/gte-multilingual-base"
# The paper's setting for each method-relevant setting (dotted key -> (value, how the paper says it)).
PAPER_SETTINGS: dict[str, tuple[Any, str]] = {
    "llm.model": (PAPER_MODEL, f"GPT-4o, the snapshot {PAPER_MODEL}"),
    "llm.temperature": (0.0, "temperature 0"),
    "llm.structured": ("off", "answers in tags, read after the fact"),
    "retrieval.mode": ("dense", "dense retrieval"),
    "retrieval.rerank": (True, "RankGPT reranking"),
    "agent.max_steps": (10, "10 steps"),
    "agent.docs_per_query": (15, "15 passages per search"),
    "agent.clarify_k": (10, "clarify_entity reads 10 passages"),
    "agent.tools": (["search", "clarify_entity", "explain", "report_inconsistency"], "all four tools"),
    "agent.stop_on_report": (True, "the research ends at the first report, as its released traces do"),
    "agent.snippet_chars": (0, "whole passages for the agent"),
    "agent.finish_action": (False, "its controller prompt offers no finish action, although its released "
                                   "traces end with give_up"),
    "agent.thoughts": (True, "a ReAct thought before each action, kept in the history"),
    "baselines.k": (20, "the baselines retrieve 20 passages"),
    "prompts.set": ("default", "the built-in templates"),
}
PROMPT_WORDING = ("prompts: the project's wording of the paper's prompts (Figs 14-22), with the paper's worked "
                  "cases, scores, rules and procedure; each rule's place, and each difference, is in the side-by-side "
                  "table under *The paper, rule by rule*")
"""What always differs: the paper's prompt texts carry over as situations, scores and rules, never as
sentences (rule by rule: :func:`claire.prompts.fidelity.side_by_side`)."""


def paper_notices(config: dict[str, Any], *, split: str | None, threshold_given: bool) -> list[str]:
    """What a run of the paper preset says once before it starts: an index embedded otherwise than with
    mGTE (the paper's retrieval), and a test split with no validation run to take its threshold from."""
    if config.get("preset") != "paper":
        return []
    notices = []
    embedder = config.get("index_embedder")
    if embedder and embedder != PAPER_EMBEDDER:
        notices.append(f"the paper preset runs on an index embedded with {embedder}, not the paper's mGTE "
                       f"({PAPER_EMBEDDER}); report.md lists it (build one with `claire index build --embedder mgte`)")
    if split == "test" and not threshold_given:
        notices.append("a test split without --threshold-from: the paper takes the test threshold from the best "
                       "validation F1 over a 0.1 grid; this run keeps the validation default")
    return notices


def describe_setup(config: dict[str, Any], reads: Callable[[str], bool] = lambda key: True) -> dict[str, Any]:
    """What a run was set up with, and where that differs from the paper's method (read from the
    run's stored configuration; settings a run does not record, or its system does not read —
    ``reads``, the registry's answer for the run's system — are left out)."""
    def value(key: str) -> Any:
        node: Any = config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    differences = []
    embedder = config.get("index_embedder")
    if embedder and embedder != PAPER_EMBEDDER:
        differences.append(f"embedder {embedder} (the paper's: mGTE, {PAPER_EMBEDDER}, which needs a model hub)")
    for key, (expected, wording) in PAPER_SETTINGS.items():
        if not reads(key):
            continue
        found = value(key)
        if found is not None and found != expected:
            differences.append(f"{key} = {json.dumps(found)} (the paper: {wording})")
    prompted = value("prompts") is not None and reads("prompts.")
    if prompted:
        differences.append(PROMPT_WORDING)
        for template, variant in sorted((value("prompts.variants") or {}).items()):
            differences.append(f"prompts.variants.{template} = {json.dumps(variant)} (the variant "
                               f"{template}.{variant}.j2; the paper: its wording in {template}.j2)")
    return {"preset": config.get("preset"), "model": value("llm.model") if reads("llm.model") else None,
            "index": value("retrieval.index"), "index_embedder": embedder, "retrieval_mode": value("retrieval.mode"),
            "rerank": value("retrieval.rerank"), "differences_from_paper": differences,
            "paper_rules": side_by_side() if prompted else [], "paper_rule_counts": fidelity_counts() if prompted else {}}


def _results_table(metrics: dict[str, Any]) -> list[str]:
    system = metrics.get("system") or "?"
    split = metrics.get("split")
    rows = [
        "| System | Split | AUROC (95% CI) | Acc | P | R | F1 |",
        "|---|---|---|---|---|---|---|",
        f"| **{system}** (this run) | {split or DASH} | {auroc_text(metrics)} | {pct(metrics['accuracy'])} "
        f"| {pct(metrics['precision'])} | {pct(metrics['recall'])} | {pct(metrics['f1'])} |",
    ]
    for key, (name, figures) in PAPER_FIGURES.items():
        marker = " ◀" if key == system else ""
        for paper_split in [split] if split in figures else list(figures):
            auroc, accuracy, f1 = figures[paper_split]
            rows.append(f"| {name} — paper{marker} | {paper_split} | {auroc:.1f} | {accuracy:.1f} | {DASH} | {DASH} | {f1:.1f} |")
    return rows


def render_report(metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> str:
    """The Markdown report of a run: results beside the paper's, confusion, recall by type, errors, usage."""
    counts = metrics["counts"]
    lines = [
        f"# Evaluation of `{metrics.get('system') or '?'}`" + (f" on the {metrics['split']} split" if metrics.get("split") else ""),
        "",
        f"Covers {metrics['covers']}. Threshold {metrics['threshold']:g}"
        + (f" ({metrics['threshold_source']})" if metrics.get("threshold_source") else "")
        + ("; a REFUTES count at or above it means *inconsistent*." if metrics.get("score_kind") == "count"
           else "; a score above it means *inconsistent*, as in the paper.") + " Scores are ×100.",
        "",
    ]
    setup = metrics.get("setup")
    if setup:
        lines += [(f"Model `{setup['model']}`, index" if setup.get("model") else "No model (the system calls none), index")
                  + f" `{setup.get('index')}`"
                  + (f" (embedder `{setup['index_embedder']}`)" if setup.get("index_embedder") else "")
                  + f", {setup.get('retrieval_mode')} retrieval" + (", RankGPT reranking" if setup.get("rerank") else "")
                  + (f", preset `{setup['preset']}`" if setup.get("preset") else "") + ".", ""]
        differences = setup.get("differences_from_paper") or []
        lines += (["**Differs from the paper's method in:** " + "; ".join(differences) + ".", ""] if differences
                  else ["Set up as the paper's method.", ""])
        if setup.get("paper_rules"):
            tally = setup.get("paper_rule_counts") or {}
            lines += ["**The paper, rule by rule** (the paper preset's templates and settings; ids of the paper's method as "
                      f"restated in `paper-method.md`): {tally.get('follows', 0)} rules followed, {tally.get('listed', 0)} "
                      f"listed differences, {tally.get('added', 0)} listed additions.", ""]
            lines += [markdown_table(setup["paper_rules"]), ""]
    for key in ("note", "threshold_hint"):
        if metrics.get(key):
            lines += [f"> **Note:** {metrics[key]}", ""]
    if metrics.get("not_in_dataset"):
        lines += [f"> **Note:** {metrics['not_in_dataset']} earlier prediction(s) of claims not in this run's dataset are "
                  "kept in predictions.jsonl and left out of these scores.", ""]
    lines += _results_table(metrics)
    lines += ["", f"Reference: {PAPER}: AUROC, accuracy and F1 as published; it gives no precision or recall ({DASH}).", ""]
    full = metrics.get("full_set")
    if full:
        lines += [f"Over the full set ({full['claims']} claims, an error counted as a score of 0, read as consistent, as "
                  f"the paper's tables cover every claim): AUROC {pct(full['auroc'])}, accuracy {pct(full['accuracy'])}, "
                  f"F1 {pct(full['f1'])}.", ""]
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
    lines += _calibration_section(metrics.get("calibration"), metrics.get("calibrated"), score_kind=metrics.get("score_kind"))
    robust = metrics.get("robustness") or {}
    events = (metrics.get("usage") or {}).get("events") or {}
    if events:
        lines += ["## Reading the model's answers", "",
                  f"{robust.get('claims_affected', 0)} claim(s) needed something beyond a clean answer: "
                  f"{robust.get('repaired_or_reasked', 0)} answer(s) read after a repair or a re-ask, "
                  f"{robust.get('invalid_or_repeated_calls', 0)} invalid or repeated tool call(s), "
                  f"{robust.get('refusals', 0)} refusal(s).", "",
                  "| What happened | Times |", "|---|---|"]
        lines += [f"| {EVENTS.get(kind, kind)} | {count} |" for kind, count in sorted(events.items())]
        lines.append("")
    usage, latency = metrics["usage"], metrics["latency_s"]
    lines += [
        "## Usage",
        "",
        f"- LLM calls: {usage['calls']:,} (+{usage['cached_calls']:,} from cache)",
        f"- Tokens: {token_summary(usage)}",
        f"- Cost: {cost_summary(usage)}",
        *([f"- Usage figures: {usage['unbelievable']} claim(s) recorded impossible token or cost figures (negative, "
           "not a number, infinite, more cached than sent); those figures are left out of these totals"]
          if usage.get("unbelievable") else []),
        f"- Latency per claim: mean {seconds(latency['mean'])}, p50 {seconds(latency['p50'])}, p95 {seconds(latency['p95'])}",
        f"- Wall time: {seconds(metrics.get('wall_time_s'))} (sum of claim latencies {seconds(latency['sum'])})",
        "",
    ]
    if metrics.get("auroc") is not None:
        lines += [f"![ROC curve]({ROC})", ""]
    return "\n".join(lines)


def _calibration_section(found: dict[str, Any] | None, calibrated: dict[str, Any] | None = None, *,
                         score_kind: str | None = None) -> list[str]:
    if not found:
        if score_kind != "count":
            return []
        return ["## Calibration", "", "None: this system's scores count the passages judged to refute the claim; "
                "they are not probabilities, so neither ECE nor `--calibrate-from` applies.", ""]
    after = [] if not calibrated else [
        f"After {calibrated.get('method', 'isotonic')} calibration fitted on `{calibrated['source']}` ({calibrated['fitted_on']} claims): "
        f"ECE {calibrated['ece']:.3f} (raw scores: {calibrated['ece_before']:.3f}).", ""]
    lines = [
        "## Calibration",
        "",
        f"Expected calibration error (ECE): {found['ece']:.3f} — how far, on average, a score is from the share of "
        "inconsistent facts among claims scored like it (0 means a score of 0.7 is right 70% of the time).",
        "",
        "| score bin | claims | mean score | inconsistent |",
        "|---|---|---|---|",
    ]
    for row in found["bins"]:
        lines.append(f"| {row['low']:.1f}–{row['high']:.1f} | {row['count']} | {row['mean_score']:.2f} | {row['positive_rate']:.2f} |")
    return lines + ["", *after, f"![Reliability diagram]({CALIBRATION})", ""]


def plot_calibration(found: dict[str, Any], path: Path, *, title: str) -> None:
    """The reliability diagram of a run: the share of inconsistent claims against the mean score
    of each bin (dot size: claims in it), beside the diagonal of perfect calibration."""
    figure = Figure(figsize=(5.5, 5), layout="constrained")
    axes = figure.subplots()
    rows = found["bins"]
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8, label="calibrated")
    axes.plot([r["mean_score"] for r in rows], [r["positive_rate"] for r in rows], marker="o", linewidth=1.4,
              label=f"this run (ECE {found['ece']:.3f})")
    axes.scatter([r["mean_score"] for r in rows], [r["positive_rate"] for r in rows],
                 s=[20 + 8 * r["count"] for r in rows], alpha=0.3)
    axes.set(xlabel="Mean inconsistency score in the bin", ylabel="Share of claims that are inconsistent", title=title,
             xlim=(0, 1), ylim=(-0.02, 1.02))
    axes.legend(loc="upper left", fontsize="small")
    figure.savefig(path, dpi=120)


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


def write_outputs(out_dir: str | Path, metrics: dict[str, Any], predictions: list[dict[str, Any]]) -> None:
    """Write metrics.json, report.md, roc.png (when AUROC is defined) and calibration.png (when the
    scores are in [0, 1]) into a run directory."""
    out_dir = Path(out_dir)
    write_atomically(out_dir / METRICS, strict_json(metrics, indent=2) + "\n")
    write_atomically(out_dir / REPORT, render_report(metrics, predictions))
    roc = out_dir / ROC
    label = f"{metrics.get('system') or 'run'} (AUROC {pct(metrics.get('auroc'))})"
    if not plot_roc([(label, predictions)], roc, title=f"ROC — {metrics.get('system') or out_dir.name}"):
        roc.unlink(missing_ok=True)
    reliability = out_dir / CALIBRATION
    if metrics.get("calibration"):
        plot_calibration(metrics["calibration"], reliability, title=f"Reliability — {metrics.get('system') or out_dir.name}")
    else:
        reliability.unlink(missing_ok=True)


