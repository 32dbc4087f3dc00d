"""The files an estimate or an audit run directory shares, and its report from them alone.

An estimate (``studies.estimate``) and an audit (``studies.audit``) are ordinary run
directories (``config.json``, ``predictions.jsonl``, metrics) plus:

- ``plan.json`` — what the run is: ``kind`` (estimate | audit), its settings, corpus sizes;
- ``claims.jsonl`` — the facts it checks, one a line: ``claim_id``, ``fact``, the source
  passage (``document_title``, ``section_title``, ``content``), ``categories`` when known;
- ``reviews.jsonl`` — people's decisions on flagged facts (:mod:`claire.studies.reviews`).

:func:`summarise` turns these into ``estimate.json`` + ``estimate.md`` (or ``audit.json`` +
``audit.md``): facts checked, flagged, reviewed, confirmed, each rate with its normal and Wilson
intervals, a breakdown by category and, for an estimate, the extrapolation to the corpus. It
reads files only, so a new decision updates the numbers without re-running anything.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claire.domain import recorded_outcome
from claire.errors import ConfigError
from claire.studies.rate_statistics import RateEstimate, estimate_rate, extrapolate
from claire.runs.predictions import PREDICTIONS, load_predictions
from claire.files import read_log, write_atomically
from claire.studies.reviews import Decisions, load_decisions
from claire.runs.predictions import row_from_prediction

PLAN = "plan.json"
CLAIMS = "claims.jsonl"
FACTS = "facts.jsonl"  # estimate only: the facts extracted from each sampled block


# -- small JSONL helpers (append-only files that survive a kill) -----------------------------
def read_plan(out_dir: Path) -> dict[str, Any] | None:
    """A run directory's plan.json (None when it has none yet)."""
    path = Path(out_dir) / PLAN
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not readable JSON ({error}); delete the run directory or use another --out") from None


def check_plan(out_dir: Path, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The run directory's plan, after checking it was made with the settings in ``wanted``."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file; give a directory for the run")
    plan = read_plan(out_dir)
    if plan is None:
        if (out_dir / PREDICTIONS).exists():
            raise ConfigError(f"{out_dir} holds another kind of run; choose another --out")
        return None
    changed = [f"{key}: {plan.get(key)!r} -> {value!r}" for key, value in wanted.items() if plan.get(key) != value]
    if changed:
        raise ConfigError(f"{out_dir} holds a run made with other settings ({'; '.join(changed)}); re-run with the "
                          "same settings to resume it, or choose another --out")
    return plan


def write_plan(out_dir: Path, plan: dict[str, Any]) -> None:
    """Write a run directory's plan.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(out_dir / PLAN, json.dumps(plan, indent=2, ensure_ascii=False) + "\n")


@contextmanager
def job_lock(out_dir: Path) -> Iterator[None]:
    """Hold the run directory for this estimate or audit, so two processes never write its files at once."""
    out_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out_dir / ".job.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{out_dir} is in use by another claire process; wait for it or choose another --out") from None
        yield
    finally:
        os.close(descriptor)


# -- the report ---------------------------------------------------------------------------
@dataclass
class FactRow:
    """One checked fact of a rate run, with its prediction and review."""
    claim: dict[str, Any]
    prediction: dict[str, Any] | None
    decision: str | None  # accept | reject | None
    comment: str | None

    @property
    def checked(self) -> bool:
        """Whether the fact was checked without an error."""
        p = self.prediction
        return p is not None and p.get("error") is None and p.get("score") is not None

    @property
    def flagged(self) -> bool:
        """Whether the check flagged the fact as inconsistent."""
        return self.prediction is not None and recorded_outcome(self.prediction) == "flagged"

    @property
    def score(self) -> float | None:
        """The fact's inconsistency score (None when unchecked)."""
        return self.prediction.get("score") if self.prediction else None


def fact_rows(out_dir: Path, decisions: Decisions) -> list[FactRow]:
    """Every drawn fact of a run directory with its prediction and decision."""
    claims = read_log(out_dir / CLAIMS)
    predictions = {p["claim_id"]: p for p in load_predictions(out_dir)} if (out_dir / PREDICTIONS).exists() else {}
    rows = []
    for claim in claims:
        decision = decisions.get(claim["claim_id"], claim.get("fact", ""))
        rows.append(FactRow(claim, predictions.get(claim["claim_id"]), decision.decision if decision else None,
                            decision.comment if decision else None))
    return rows


def _rate(estimate: RateEstimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {**estimate.model_dump(), "text": estimate.paper_form(), "wilson_text": estimate.wilson_form()}


def summarise(out_dir: str | Path, *, confidence: float | None = None, decision_files: Iterable[str | Path] = ()) -> dict[str, Any]:
    """Compute the run's rates from its files and write ``<kind>.json`` and ``<kind>.md``."""
    out_dir = Path(out_dir)
    plan = read_plan(out_dir)
    if plan is None or plan.get("kind") not in ("estimate", "audit"):
        raise ConfigError(f"{out_dir} is not an estimate or audit run directory (no plan.json); "
                          "make one with `claire estimate --index ...` or `claire audit ...`")
    confidence = confidence if confidence is not None else plan.get("confidence", 0.99)
    decision_files = [str(p) for p in decision_files]
    rows = fact_rows(out_dir, load_decisions(out_dir, decision_files))
    checked = [r for r in rows if r.checked]
    flagged = [r for r in checked if r.flagged]
    reviewed = [r for r in flagged if r.decision]
    confirmed = [r for r in reviewed if r.decision == "accept"]
    n = len(checked)
    flagged_rate = estimate_rate(len(flagged), n, confidence) if n else None
    confirmed_rate = estimate_rate(len(confirmed), n, confidence) if n and reviewed else None
    summary: dict[str, Any] = {
        "kind": plan["kind"],
        **{key: plan.get(key) for key in ("index", "seed", "unit", "dataset", "format") if key in plan},
        "confidence": confidence,
        "facts": len(rows),
        "checked": n,
        "errors": sum(1 for r in rows if r.prediction is not None and not r.checked),
        "not_run": sum(1 for r in rows if r.prediction is None),
        "flagged": len(flagged),
        "reviewed": len(reviewed),
        "confirmed": len(confirmed),
        "rejected": len(reviewed) - len(confirmed),
        "unreviewed": len(flagged) - len(reviewed),
        "flagged_rate": _rate(flagged_rate),
        "confirmed_rate": _rate(confirmed_rate),
        "confirmed_rate_is_lower_bound": bool(confirmed_rate) and len(reviewed) < len(flagged),
        "review_precision": _rate(estimate_rate(len(confirmed), len(reviewed), confidence) if reviewed else None),
        "categories": _categories(checked, confidence),
        "decision_files": decision_files,
        "flagged_facts": [
            {"claim_id": r.claim["claim_id"], "fact": r.claim.get("fact"), "score": r.score, "decision": r.decision,
             "comment": r.comment, "source": r.claim.get("document_title")}
            for r in sorted(flagged, key=lambda r: -(r.score or 0.0))
        ],
    }
    if plan["kind"] == "estimate":
        summary["extrapolation"] = _extrapolation(out_dir, plan, flagged_rate, confirmed_rate)
    write_atomically(out_dir / f"{plan['kind']}.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_atomically(out_dir / f"{plan['kind']}.md", render(summary, plan, rows))
    if summary["categories"]:
        plot_categories(summary["categories"], out_dir / CATEGORY_FIGURE)
    return summary


CATEGORY_FIGURE = "categories.png"
"""The per-category figure of an estimate or audit whose blocks carry categories (the paper's Fig. 5)."""


def plot_categories(categories: list[dict[str, Any]], path: Path, top: int = 20) -> None:
    """Horizontal bars of the flagged share of the ``top`` most checked categories, each with its
    normal-approximation interval (Wilson's as a thin line beside it)."""
    from matplotlib.figure import Figure

    shown = [c for c in categories if c.get("flagged_rate")][:top][::-1]
    if not shown:
        return
    figure = Figure(figsize=(7, 0.35 * len(shown) + 1.2), layout="constrained")
    axes = figure.subplots()
    rows = range(len(shown))
    rates = [100 * c["flagged_rate"]["rate"] for c in shown]
    normal = [[100 * (c["flagged_rate"]["rate"] - c["flagged_rate"]["low"]) for c in shown],
              [100 * (c["flagged_rate"]["high"] - c["flagged_rate"]["rate"]) for c in shown]]
    axes.barh(rows, rates, xerr=normal, color="#c2410c", ecolor="black", capsize=2, label="flagged (normal interval)")
    for row, item in zip(rows, shown):
        axes.plot([100 * item["flagged_rate"]["wilson_low"], 100 * item["flagged_rate"]["wilson_high"]], [row + 0.3] * 2,
                  color="#64748b", linewidth=1)
    axes.set_yticks(list(rows), [f"{c['category'][:40]} (n={c['checked']})" for c in shown], fontsize="small")
    axes.set(xlabel="flagged share of checked facts (%)", title="Flagged facts by article category")
    axes.legend(loc="lower right", fontsize="small")
    figure.savefig(path, dpi=120)


def _categories(checked: list[FactRow], confidence: float) -> list[dict[str, Any]]:
    tally: dict[str, list[int]] = {}
    for row in checked:
        for category in dict.fromkeys(row.claim.get("categories") or []):
            counts = tally.setdefault(str(category), [0, 0, 0])
            counts[0] += 1
            counts[1] += row.flagged
            counts[2] += row.flagged and row.decision == "accept"
    result = []
    for category, (n, flagged, confirmed) in sorted(tally.items(), key=lambda item: (-item[1][0], item[0])):
        result.append({"category": category, "checked": n, "flagged": flagged, "confirmed": confirmed,
                       "flagged_rate": _rate(estimate_rate(flagged, n, confidence)),
                       "confirmed_rate": _rate(estimate_rate(confirmed, n, confidence))})
    return result


def _extrapolation(out_dir: Path, plan: dict[str, Any], flagged: RateEstimate | None,
                   confirmed: RateEstimate | None) -> dict[str, Any] | None:
    """Facts per block from the sampled blocks whose extraction worked, times the corpus's blocks."""
    extracted = [r for r in read_log(out_dir / FACTS) if r.get("error") is None]
    latest = {r["block_id"]: r for r in extracted}
    if not latest or flagged is None:
        return None
    found = sum(len(r.get("facts") or []) for r in latest.values())
    common = dict(unit="block", units_sampled=len(latest), facts_found=found, corpus_units=int(plan["corpus_blocks"]))
    return {
        "flagged": extrapolate(flagged, **common).model_dump(),
        "confirmed": extrapolate(confirmed, **common).model_dump() if confirmed else None,
    }


def _count(value: float) -> str:
    return f"{value:,.0f}"


def render(summary: dict[str, Any], plan: dict[str, Any], rows: list[FactRow]) -> str:
    """The rate run's Markdown summary."""
    kind = summary["kind"]
    conf = f"{summary['confidence'] * 100:g}%"
    if kind == "estimate":
        title = (f"# How inconsistent is index “{plan.get('index')}”?\n\n{plan.get('units')} {plan.get('unit')}s drawn "
                 f"uniformly (seed {plan.get('seed')}) from {plan.get('corpus_blocks'):,} blocks in "
                 f"{plan.get('corpus_articles'):,} articles; {summary['facts']} of their facts sampled uniformly.")
    else:
        title = (f"# Audit of {Path(str(plan.get('dataset'))).name} ({plan.get('format')})\n\n{summary['facts']} claims the "
                 f"benchmark takes as true ({plan.get('selection', '')}), checked against index “{plan.get('index')}”.")
    lines = [title, ""]
    lines += ["| | count | rate (normal, " + conf + ") | Wilson " + conf + " |", "|---|---:|---|---|",
              f"| facts checked | {summary['checked']} | | |"]
    for label, key, count in (("flagged by the system", "flagged_rate", summary["flagged"]),
                              ("confirmed by people", "confirmed_rate", summary["confirmed"])):
        rate = summary[key]
        lines.append(f"| {label} | {count} | {rate['text'] if rate else '—'} | {rate['wilson_text'] if rate else '—'} |")
    lines.append("")
    notes = []
    if summary["errors"] or summary["not_run"]:
        notes.append(f"{summary['errors']} facts failed to check and {summary['not_run']} were not run yet; they are "
                     "left out of the rates (re-run the command to retry).")
    if summary["flagged"]:
        notes.append(f"{summary['reviewed']} of {summary['flagged']} flagged facts reviewed ({summary['confirmed']} "
                     f"confirmed, {summary['rejected']} rejected); review the rest with `claire review DIR`.")
    if summary["confirmed_rate_is_lower_bound"]:
        notes.append("The confirmed rate counts unreviewed flags as not confirmed, so it is a lower bound until "
                     "every flagged fact is reviewed.")
    if summary["review_precision"]:
        notes.append(f"Share of reviewed flags confirmed: {summary['review_precision']['text']}.")
    notes.append("Facts the system did not flag count as consistent, so every rate here is a lower bound on the "
                 "corpus's true rate (as in the paper).")
    lines += [f"- {note}" for note in notes] + [""]
    extra = summary.get("extrapolation")
    if extra:
        f = extra["flagged"]
        lines += ["## Extrapolation to the corpus", "",
                  f"{f['facts_found']} facts from {f['units_sampled']} sampled blocks: {f['facts_per_unit']:.2f} facts per "
                  f"block × {f['corpus_units']:,} blocks ≈ {_count(f['corpus_facts'])} facts.", ""]
        for label, item in (("flagged", f), ("confirmed", extra.get("confirmed"))):
            if item:
                normal = (f"normal approximation {conf}: {_count(item['normal_low'])} – {_count(item['normal_high'])}, as "
                          "the paper gives it; " if item.get("normal_low") is not None else "")
                lines.append(f"- {label}: about {_count(item['inconsistent'])} facts "
                             f"({normal}Wilson {conf}: {_count(item['inconsistent_low'])} – {_count(item['inconsistent_high'])}).")
        lines += ["", "(The uncertainty of facts per block is not included.)", ""]
    if summary["categories"]:
        lines += ["## By category", "", "Flagged share per article category (a fact counts for each category of its article), "
                  "with the paper's normal-approximation interval first and Wilson's beside it.", "",
                  "| category | checked | flagged | rate ± margin [normal] | Wilson | confirmed |", "|---|---:|---:|---|---|---:|"]
        for item in summary["categories"][:40]:
            rate = item["flagged_rate"]
            lines.append(f"| {item['category']} | {item['checked']} | {item['flagged']} | "
                         f"{rate['text']} | {rate['wilson_text']} | {item['confirmed']} |")
        lines += ["", f"![Flagged share by category]({CATEGORY_FIGURE})", ""]
    ranked = sorted((r for r in rows if r.checked), key=lambda r: -(r.score or 0.0))
    lines += ["## Facts, most suspicious first", "", "| score | verdict | decision | fact | source |", "|---:|---|---|---|---|"]
    for row in ranked[:200]:
        lines.append(f"| {row.score:.2f} | {row.prediction.get('verdict')} | {row.decision or '—'} | "  # type: ignore[union-attr]
                     f"{_cell(row.claim.get('fact'))} | {_cell(row.claim.get('document_title'))} |")
    if len(ranked) > 200:
        lines.append(f"\n({len(ranked) - 200} more in predictions.jsonl)")
    for row in ranked:
        if not row.flagged:
            break
        shown = row_from_prediction(row.prediction)  # type: ignore[arg-type]
        lines += ["", f"### {row.claim.get('fact')}", "",
                  f"Score {row.score:.2f}; decision: {row.decision or 'not reviewed'}"
                  + (f" — {row.comment}" if row.comment else "") + ".", ""]
        for passage in shown.passages:
            where = f"{passage.get('document_title')} > {passage.get('section_title')}".rstrip(" >")
            lines += [f"> [{passage.get('n')}] **{where}**: {passage.get('content')}", ">"]
        if shown.reasoning:
            lines += ["", shown.reasoning]
    return "\n".join(lines) + "\n"


def _cell(text: Any) -> str:
    return " ".join(str(text or "—").split()).replace("|", "\\|")
