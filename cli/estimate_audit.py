"""``claire estimate`` and ``claire audit``: how inconsistent a corpus or a benchmark is, and
:func:`print_rates`, the summary both print (and ``claire review`` after a session)."""

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from claire.cli.options import ConcurrencyOpt, JsonOpt, Settings, SystemOpt, console, err, run, with_settings
from claire.errors import ConfigError


@with_settings("index", "path", "model", "base_url", "no_cache", "config_file", "sets")
def estimate_command(
    sample_size: Annotated[bool, typer.Option("--sample-size", help="Print Cochran's sample size for --confidence, --margin, --p.")] = False,
    confirmed: Annotated[Optional[int], typer.Option("--confirmed", help="Facts confirmed inconsistent (with --total): print the rate.")] = None,
    total: Annotated[Optional[int], typer.Option("--total", help="Facts checked (with --confirmed).")] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", help="Facts to check (with --index).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the sample.")] = 0,
    blocks: Annotated[Optional[int], typer.Option("--blocks", help="Blocks (or articles) to draw before sampling facts (default: --sample).")] = None,
    unit: Annotated[str, typer.Option("--unit", help="Draw blocks (default) or whole articles.")] = "block",
    out: Annotated[Optional[Path], typer.Option("--out", help="Run directory (re-running resumes it).")] = None,
    from_dir: Annotated[Optional[Path], typer.Option("--from", help="Recompute an estimate or audit from its files and decisions.")] = None,
    decisions: Annotated[Optional[list[Path]], typer.Option("--decisions", help="More decisions (reviews JSONL, e.g. exported by the web app); repeatable.")] = None,
    confidence: Annotated[Optional[float], typer.Option("--confidence", help="Confidence level (default 0.99).")] = None,
    margin: Annotated[float, typer.Option("--margin", help="Margin of error for --sample-size.")] = 0.05,
    p: Annotated[float, typer.Option("--p", help="Expected proportion for --sample-size.")] = 0.5,
    population: Annotated[Optional[int], typer.Option("--population", help="Finite population size (correction).")] = None,
    as_json: JsonOpt = False,
    system: SystemOpt = None,
    concurrency: ConcurrencyOpt = None,
    *,
    settings: Settings,
) -> None:
    """How inconsistent is a corpus: sample sizes, rates with intervals, and sampled estimates."""
    from claire.studies.rate_statistics import cochran_sample_size, estimate_rate

    modes = [sample_size, confirmed is not None or total is not None, settings.index is not None or sample is not None or out is not None,
             from_dir is not None]
    if sum(modes) != 1:
        raise ConfigError("choose one: --sample-size, --confirmed K --total N, --index NAME --sample K --out DIR, or --from DIR")
    level = 0.99 if confidence is None else confidence
    if sample_size:
        n = cochran_sample_size(level, margin, p, population)
        if as_json:
            print(json.dumps({"sample_size": n, "confidence": level, "margin": margin, "p": p, "population": population}))
        else:
            console.print(f"sample size: [bold]{n}[/] facts (confidence {level:g}, margin ±{margin:g}, p {p:g}"
                          + (f", population {population:,}" if population else "") + ")")
        return
    if modes[1]:
        if confirmed is None or total is None:
            raise ConfigError("give both --confirmed K and --total N")
        rate = estimate_rate(confirmed, total, level, population)
        if as_json:
            print(json.dumps({**rate.model_dump(), "text": rate.paper_form(), "wilson_text": rate.wilson_form()}))
        else:
            console.print(f"{confirmed} of {total} at {level * 100:g}%: [bold]{rate.paper_form()}[/] (normal approximation); "
                          f"Wilson {rate.wilson_form()}")
        return
    if from_dir is not None:
        from claire.studies.rate_runs import summarise

        summary = summarise(from_dir, confidence=confidence, decision_files=decisions or [])
    else:
        from claire.studies.estimate import run_estimate

        if settings.index is None or sample is None or out is None:
            raise ConfigError("an estimate needs --index NAME, --sample K and --out DIR")
        if unit not in ("block", "article"):
            raise ConfigError(f"--unit must be block or article, got {unit!r}")
        config = settings.batch(system, concurrency)
        summary = run(run_estimate(config=config, sample=sample, seed=seed, out_dir=out, units=blocks, unit=unit,  # type: ignore[arg-type]
                                   confidence=level, decision_files=decisions or [], console=err))
        from_dir = out
    print_rates(summary, from_dir, as_json)


def print_rates(summary: dict[str, Any], out: Path, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    flagged, confirmed = summary["flagged_rate"], summary["confirmed_rate"]
    console.print(f"{summary['checked']} facts checked, {summary['flagged']} flagged, {summary['reviewed']} reviewed, "
                  f"{summary['confirmed']} confirmed")
    if flagged:
        console.print(f"flagged:   [bold]{flagged['text']}[/]  (Wilson {flagged['wilson_text']})")
    if confirmed:
        bound = " — a lower bound until every flag is reviewed" if summary["confirmed_rate_is_lower_bound"] else ""
        console.print(f"confirmed: [bold]{confirmed['text']}[/]  (Wilson {confirmed['wilson_text']}){bound}")
    extra = summary.get("extrapolation")
    if extra:
        item = extra["confirmed"] or extra["flagged"]
        which = "confirmed" if extra["confirmed"] else "flagged"
        span = (f" ({item['normal_low']:,.0f}–{item['normal_high']:,.0f}; Wilson {item['inconsistent_low']:,.0f}–"
                f"{item['inconsistent_high']:,.0f})" if item.get("normal_low") is not None else "")
        console.print(f"corpus: ≈{item['corpus_facts']:,.0f} facts ({item['facts_per_unit']:.2f} per block), "
                      f"≈{item['inconsistent']:,.0f} {which} inconsistent{span}")
    console.print(f"wrote {out}/{summary['kind']}.json and {summary['kind']}.md")


@with_settings("index", "path", "model", "base_url", "no_cache", "config_file", "sets")
def audit_command(
    dataset: Annotated[Path, typer.Option("--dataset", help="The benchmark file in its published format.")],
    fmt: Annotated[str, typer.Option("--format", help="feverous (JSONL), ambigqa (JSON) or wikicollide.")],
    out: Annotated[Path, typer.Option("--out", help="Run directory (re-running resumes it).")],
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N claims.")] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", help="A random sample of N claims (AmbigQA: N examples), as the paper audits; see --seed.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --sample draw.")] = 0,
    margin: Annotated[Optional[float], typer.Option("--margin", help="Draw a random sample of Cochran's size for --confidence and this margin of error (e.g. 0.05), the paper's rule.")] = None,
    confidence: Annotated[float, typer.Option("--confidence")] = 0.99,
    decisions: Annotated[Optional[list[Path]], typer.Option("--decisions", help="More decisions (reviews JSONL); repeatable.")] = None,
    as_json: JsonOpt = False,
    system: SystemOpt = None,
    concurrency: ConcurrencyOpt = None,
    *,
    settings: Settings,
) -> None:
    """Check the claims a benchmark takes as true against the corpus; the share contradicted."""
    from claire.studies.audit import run_audit

    config = settings.batch(system, concurrency)
    summary = run(run_audit(dataset=dataset, fmt=fmt, config=config, out_dir=out, limit=limit, sample=sample, seed=seed,
                            margin=margin, confidence=confidence, decision_files=decisions or [], console=err))
    print_rates(summary, out, as_json)
