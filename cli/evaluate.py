"""``claire eval``, ``metrics``, ``compare`` and ``sweep``: batch evaluation and its runs."""

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from claire.errors import ClaireError, ConfigError, ExitCode

if TYPE_CHECKING:
    from claire.config import Config
    from claire.indexes.index_meta import IndexMeta
from claire.cli.options import (
    ConcurrencyOpt, DatasetOpt, DocsPerQueryOpt, IndexOpt, MaxStepsOpt, NoRerankOpt, Settings, SystemOpt,
    ToolsOpt, console, err, require_index, run, with_settings,
)


def index_meta(config: "Config") -> "IndexMeta | None":
    """The description of the index a run searches (None: not found, or not a Qdrant index)."""
    from claire.indexes.catalog import list_indexes

    retrieval = config.retrieval
    if retrieval.backend != "qdrant":
        return None
    key = retrieval.qdrant_api_key.get_secret_value() if retrieval.qdrant_api_key else None
    try:
        found = list_indexes(retrieval.index_root(), retrieval.url, api_key=key)
    except ClaireError:
        return None  # opening the system says what is wrong with the index
    return next((meta for meta in found if meta.name == retrieval.index), None)


@with_settings("preset", "model", "base_url", "no_cache", "refresh_cache", "config_file", "sets")
def eval_command(
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", help="Run directory (re-running the same command resumes it).")],
    system: SystemOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Only the first N claims.")] = None,
    ids: Annotated[Optional[str], typer.Option("--ids", help="Only these claim ids (comma-separated).")] = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="Re-run only the claims that failed.")] = False,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Decision threshold (default 0.5; nli: a REFUTES count).")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    calibrate_from: Annotated[Optional[Path], typer.Option("--calibrate-from", help="Calibrate the scores on this validation run (metrics.json's calibrated section; calibrator.json in the run).")] = None,
    calibration: Annotated[str, typer.Option("--calibration", help="How --calibrate-from fits: isotonic or platt.")] = "isotonic",
    cut_from: Annotated[Optional[Path], typer.Option("--cut-from", help="--system cascade: choose the first-pass cut on this validation run (of the cascade or of its first-pass system) so that agent.cascade_recall of the inconsistent facts reach claire.")] = None,
    max_steps: MaxStepsOpt = None,
    docs_per_query: DocsPerQueryOpt = None,
    no_rerank: NoRerankOpt = False,
    tools: ToolsOpt = None,
    task: Annotated[Optional[str], typer.Option("--task", help="wikicollide (default), feverous (agent.task), citations (WAFER-style records; --index names the sources index), or worklist (the corpus run over --index, scored against a key of planted contradictions given as --dataset).")] = None,
    index: IndexOpt = None,
    validation: Annotated[Optional[Path], typer.Option("--validation", help="Evaluate this validation set first (into OUT-validation, resumable) and decide the test verdicts at its best-F1 threshold: the paper's protocol in one command.")] = None,
    validation_index: Annotated[Optional[str], typer.Option("--validation-index", help="With --validation: the index its claims are searched in (default: --index; an index built --from-wikicollide holds one split's passages).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse, rather than warn, when the index holds the passages of other claims than those evaluated.")] = False,
    *,
    settings: Settings,
) -> None:
    """Evaluate a system on WikiCollide (or FEVEROUS with --task feverous): predictions.jsonl, metrics.json, report.md."""
    from claire.agent.runtime import open_system, run_settings
    from claire.runs.predictions import refuse_if_in_use
    from claire.evals.protocol import foreign_claims, threshold_note
    from claire.evals.runner import failure, run_eval, select_records, with_threshold
    from claire.tasks.registry import get_task

    if task == "worklist":  # the corpus run over the whole index, scored against a key of planted pairs
        from claire.cli.worklist import corpus_run

        corpus_run(settings.batch(system, concurrency, **{"retrieval.index": index}), titles=None, out=out, key=dataset)
        return
    chosen = get_task(task)
    if validation is not None:
        if threshold is not None or threshold_from is not None:
            raise ConfigError("--validation chooses the threshold on the validation set: leave out --threshold and --threshold-from")
        if not chosen.sweepable:
            raise ConfigError(f"--validation is for WikiCollide runs, not the {chosen.name} task")
        threshold_from = out.with_name(out.name + "-validation")
        err.print(f"[bold]validation:[/] {validation} into {threshold_from}")
        eval_command.__wrapped__(dataset=validation, out=threshold_from, system=system, limit=limit, ids=ids, concurrency=concurrency,
                     retry_errors=retry_errors, threshold=None, threshold_from=None, calibrate_from=None,
                     calibration=calibration, cut_from=cut_from, max_steps=max_steps, docs_per_query=docs_per_query,
                     no_rerank=no_rerank, tools=tools, task=task, index=validation_index or index, validation=None,
                     validation_index=None, strict=strict, settings=settings)
        err.print(f"[bold]test:[/] {dataset} into {out}, at the best-F1 threshold of {threshold_from}")
    config = settings.batch(system, concurrency,
                         **{"agent.max_steps": max_steps, "agent.docs_per_query": docs_per_query,
                            "retrieval.rerank": False if no_rerank else None, "agent.tools": tools,
                            chosen.index_setting: index, **({"agent.task": task} if task else {}),
                            **({"agent.system": system or chosen.system} if chosen.system else {})})
    config = with_threshold(chosen, config, threshold, threshold_from)
    if cut_from is not None:
        from claire.agent.cascade import cut_for_recall
        from claire.runs.predictions import load_predictions
        from claire.evals.runner import check_source_run

        from claire.agent.registry import system_class

        setting = getattr(system_class(config.agent.system), "cut_setting", None)
        if setting is None:
            raise ConfigError("--cut-from chooses the cascade's cut: use it with --system cascade")
        cut = cut_for_recall(load_predictions(check_source_run(cut_from, "--cut-from")), config.agent.cascade_recall)
        config = config.with_overrides({setting: cut})
        err.print(f"cascade cut {cut:g}: {config.agent.cascade_recall:.0%} of {cut_from}'s inconsistent facts reach claire")
    records = select_records(chosen.load_claims(dataset), ids=ids, limit=limit, source=dataset)
    for warning in chosen.input_warnings(records, config.agent.max_fact_chars, source=str(dataset)):
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if chosen.index_setting == "retrieval.index" and chosen.corpus_records:
        require_index(config, index is not None, f"evaluating {dataset.name}")
        problem = foreign_claims(index_meta(config), [record.claim_id for record in records], dataset.name)
        if problem and strict:
            raise ConfigError(problem + "; --strict refuses such a run")
        if problem:
            err.print(f"[yellow]warning:[/] {escape(problem)}")
    note = threshold_note(preset=config.preset, split=chosen.split_of(dataset),
                          threshold_chosen=threshold is not None or threshold_from is not None)
    if note and chosen.sweepable:
        err.print(f"[bold yellow]note:[/] {escape(note)}")
    refuse_if_in_use(out)

    async def go():
        async with open_system(config) as system_:
            return await run_eval(records, system_, out, task=chosen, concurrency=config.eval.concurrency,
                                  config_public=run_settings(config), retry_errors=retry_errors, dataset=dataset,
                                  threshold=threshold if chosen.threshold_setting is None else None,
                                  threshold_from=threshold_from, calibrate_from=calibrate_from, calibration_method=calibration, console=err)

    started = time.perf_counter()
    summary = run(go())
    wall = time.perf_counter() - started  # the whole run as the user waits for it: loading the system included
    changed = f", {summary.changed} run again because their record changed" if summary.changed else ""
    console.print(f"[bold]{summary.system}[/] on {summary.total} {chosen.records_name} ({summary.ran} run now, "
                  f"{summary.skipped} already done{changed}, {summary.errors} errors) in {wall:.1f} s"
                  + (f" ({summary.wall_time_s:.1f} s checking)" if wall - summary.wall_time_s >= 1 else ""))
    if summary.left_out:
        console.print(f"{summary.left_out} earlier prediction(s) of {chosen.records_name} not in this dataset are kept in "
                      "predictions.jsonl and left out of the scores")
    for line in chosen.headline(summary.metrics):
        console.print(line, highlight=False)
    same = one_score(out) if chosen.sweepable else None  # a task scored by AUROC
    if same is not None:
        err.print(f"[yellow]warning:[/] every scored claim got the same score ({same:g}), so AUROC says nothing about "
                  "this system (50 means no ranking at all); was the model a stand-in that knew none of these records?")
    written = ["predictions.jsonl", "metrics.json", "report.md"] + sorted(p.name for p in out.glob("*.png"))
    console.print(f"wrote {out}/{', '.join(written)}")
    problem = failure(summary, config.eval.max_error_share, chosen.records_name)
    if problem:
        err.print(f"[red]error:[/] {problem}")
        raise typer.Exit(ExitCode.ERROR)


def metrics_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `claire eval`.")],
    threshold: Annotated[Optional[float], typer.Option("--threshold")] = None,
    threshold_from: Annotated[Optional[Path], typer.Option("--threshold-from", help="Reuse the best-F1 threshold of this validation run.")] = None,
    split: Annotated[Optional[str], typer.Option("--split", help="validation or test (default: from the dataset name).")] = None,
    calibrate_from: Annotated[Optional[Path], typer.Option("--calibrate-from", help="Calibrate this run's scores on a validation run and report the calibrated ECE (calibrator.json kept in the run).")] = None,
    calibration: Annotated[str, typer.Option("--calibration", help="How --calibrate-from fits: isotonic or platt.")] = "isotonic",
) -> None:
    """Recompute metrics, report and ROC plot from a run's predictions alone."""
    from claire.runs.predictions import read_run_config
    from claire.evals.reporting import compare_runs
    from claire.evals.runner import run_task, score_run

    metrics = score_run(run_dir, threshold=threshold, threshold_from=threshold_from, split=split,
                        calibrate_from=calibrate_from, calibration_method=calibration)
    task = run_task(read_run_config(run_dir))
    if task.sweepable:
        console.print(compare_runs([run_dir]))
    else:
        for line in task.headline(metrics):
            console.print(line, highlight=False)
    console.print(f"rewrote {run_dir}/metrics.json and report.md")


def compare_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories; deltas are against the first.")],
    fmt: Annotated[Optional[str], typer.Option("--format", help="table, blocks (one block a run, for a narrow terminal), markdown or csv (default: a table on a wide terminal, blocks on a narrow one, Markdown in a pipe).")] = None,
) -> None:
    """Side-by-side metrics of several runs, with deltas, and the settings in which they differ."""
    from claire.evals.reporting import compare_blocks, compare_runs, compare_text

    if fmt not in (None, "table", "blocks", "markdown", "csv"):
        raise ConfigError(f"--format must be table, blocks, markdown or csv, not {fmt!r}")
    if fmt is None:
        fmt = "markdown" if not console.is_terminal else ("table" if console.width >= 120 else "blocks")
    if fmt == "table":
        console.print(compare_runs(run_dirs))
    else:
        text = compare_blocks(run_dirs) if fmt == "blocks" else compare_text(run_dirs, fmt)
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")


@with_settings("index", "preset", "model", "base_url", "no_cache", "refresh_cache", "config_file", "sets")
def sweep_command(
    sweep_file: Annotated[Path, typer.Argument(help="A sweep YAML (see evals/sweeps/).")],
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", help="Sweep directory; one resumable run per cell.")],
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Only the first N claims.")] = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells without running them.")] = False,
    *,
    settings: Settings,
) -> None:
    """Run a grid of configurations (systems, tools, steps x docs, rerank, prompt variants, models)."""
    from claire.agent.runtime import open_system
    from claire.evals.sweep import plan_sweep, run_sweep

    config = settings.batch(None, concurrency)
    plan = plan_sweep(sweep_file, config)
    if dry_run:
        console.print(f"sweep {plan.name}: {len(plan.cells)} cells")
        for cell in plan.cells:
            console.print(f"  {out / cell.dir_name}  ({cell.name})")
        return
    for cell in plan.cells:  # the sweep file's base or cells may name the index
        require_index(cell.config, settings.index is not None, f"sweeping over {dataset.name}")
    summary = run(run_sweep(sweep_file, dataset=dataset, out_dir=out, base_config=config, make_system=open_system,
                            limit=limit, concurrency=concurrency, retry_errors=retry_errors, console=err))
    # two short lines, the path never broken across lines (a narrow terminal wraps it whole, or not at all)
    console.print(f"sweep {summary.name}: {len(summary.cells)} cells in {summary.wall_time_s:.1f} s")
    console.print(f"summary: {out}/summary.md", soft_wrap=True, highlight=False)


def one_score(run_dir: Path) -> float | None:
    """The one score every scored claim of a run got, when there are two or more and they are all equal."""
    from claire.runs.predictions import load_predictions

    try:
        scores = [p["score"] for p in load_predictions(run_dir) if p.get("score") is not None and p.get("error") is None]
    except ClaireError:
        return None
    return scores[0] if len(scores) > 1 and len(set(scores)) == 1 else None
