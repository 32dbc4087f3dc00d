"""Terminal review of the facts a run flagged: ``claire review DIR``.

Walks the flagged facts of a run directory (an estimate, an audit, a scan or an eval), most
suspicious first, showing the fact, where it comes from, the passages the verifier cited and its
analysis, and asks accept / reject / skip / quit. Each decision is appended to
``DIR/reviews.jsonl`` at once (:mod:`claire.studies.reviews`), so quitting or a crash loses
nothing and the next session starts with the facts still undecided. Estimates and audits are
re-reported from the decisions when the session ends. :func:`review_command` is the command.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console, Group
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from claire.cli.estimate_audit import print_rates
from claire.cli.terminal import counted
from claire.cli.options import console
from claire.errors import ConfigError

Ask = Callable[[str], str]


@dataclass
class ReviewResult:
    """What one review session did."""
    flagged: int
    decided_before: int
    accepted: int = 0
    rejected: int = 0
    skipped: int = 0
    stopped: bool = False
    summary: dict[str, Any] | None = None


def _ask_with(console: Console) -> Ask:
    def ask(question: str) -> str:
        return Prompt.ask(question, console=console, default="", show_default=False)

    return ask


def _show(console: Console, number: int, total: int, claim: dict[str, Any], prediction: dict[str, Any]) -> None:
    from rich.markdown import Markdown

    from claire.runs.predictions import row_from_prediction

    row = row_from_prediction(prediction)
    where = " > ".join(part for part in (claim.get("document_title"), claim.get("section_title")) if part)
    body: list[Any] = [Text.assemble(("Fact: ", "bold"), claim.get("fact") or row.fact)]
    if where:
        body.append(Text.assemble(("From: ", "bold"), where))
    if claim.get("content"):
        content = " ".join(str(claim["content"]).split())
        body.append(Text(content if len(content) <= 500 else content[:499] + "…", style="dim"))
    body.append(Text.assemble(("Inconsistency score: ", "bold"), f"{row.score:.2f}" if row.score is not None else "n/a"))
    console.print(Panel(Group(*body), title=f"flagged fact {number} of {total}", border_style="red"))
    passages = row.passages or [p for p in _all_passages(prediction)][:3]
    if passages:
        table = Table(title="evidence", title_justify="left", show_lines=True, expand=True)
        table.add_column("\\[n]", width=4, justify="right")
        table.add_column("article > section", ratio=1)
        table.add_column("passage", ratio=3)
        for passage in passages:
            where = Text.assemble((str(passage.get("document_title")), "bold"), "\n" + str(passage.get("section_title") or ""))
            table.add_row(str(passage.get("n")), where, Text(str(passage.get("content") or "")[:600]))
        console.print(table)
    for item in prediction.get("trace") or []:
        if item.get("action_name") == "report_inconsistency" and item.get("action_argument"):
            console.print(Panel(Text(str(item["action_argument"])), title="the agent reported", border_style="yellow"))
    if row.reasoning:
        console.print(Panel(Markdown(row.reasoning), title="verifier analysis"))


def _all_passages(prediction: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for item in prediction.get("trace") or []:
        if item.get("action_name") == "search" and isinstance(item.get("action_output"), list):
            found += [p for p in item["action_output"] if isinstance(p, dict)]
    return found


def review_run(out_dir: Path, console: Console, *, ask: Ask | None = None, reviewer: str | None = None,
               decision_files: list[Path] | None = None) -> ReviewResult:
    """Ask about each flagged, undecided fact of ``out_dir``; record the answers; re-report."""
    from claire.runs.predictions import PREDICTIONS, load_predictions
    from claire.files import read_log
    from claire.studies.rate_runs import CLAIMS, read_plan, summarise
    from claire.domain import recorded_outcome
    from claire.studies.reviews import Decision, append_decision, load_decisions

    out_dir = Path(out_dir)
    if not (out_dir / PREDICTIONS).is_file():
        raise ConfigError(f"{out_dir} has no {PREDICTIONS}: give the directory of an estimate, audit, scan or eval run")
    ask = ask or _ask_with(console)
    predictions = {p["claim_id"]: p for p in load_predictions(out_dir)}
    claims = {c["claim_id"]: c for c in read_log(out_dir / CLAIMS)}
    decisions = load_decisions(out_dir, decision_files or [])
    flagged = [p for p in predictions.values()
               if recorded_outcome(p) == "flagged" and (not claims or p["claim_id"] in claims)]
    flagged.sort(key=lambda p: (-(p.get("score") or 0.0), p["claim_id"]))
    pending = [p for p in flagged if decisions.get(p["claim_id"], p.get("claim_text", "")) is None]
    result = ReviewResult(flagged=len(flagged), decided_before=len(flagged) - len(pending))
    console.print(f"{counted(len(flagged), 'flagged fact')}, {result.decided_before} already decided, {len(pending)} to review "
                  f"(decisions go to {out_dir / 'reviews.jsonl'})")
    for number, prediction in enumerate(pending, start=1):
        claim = claims.get(prediction["claim_id"]) or {"fact": prediction.get("claim_text", "")}
        _show(console, number, len(pending), claim, prediction)
        while True:
            try:
                answer = ask("\\[c] confirmed (a real contradiction), \\[n] not a contradiction, \\[s]kip, \\[q]uit"
                             ).strip().lower()
            except EOFError:
                answer = "q"
            # the keys of claire check's question; a and r (accept, reject) still answer as before
            answer = {"c": "a", "confirmed": "a", "n": "r", "not": "r"}.get(answer, answer)
            if answer in ("a", "accept", "r", "reject", "s", "skip", "", "q", "quit"):
                break
            console.print("please answer c, n, s or q")
        if answer in ("q", "quit"):
            result.stopped = True
            break
        if answer in ("s", "skip", ""):
            result.skipped += 1
            continue
        try:
            comment = ask("comment (optional)").strip()
        except EOFError:
            comment = ""
        decision = "accept" if answer.startswith("a") else "reject"
        append_decision(out_dir, Decision(claim_id=prediction["claim_id"], fact=claim.get("fact") or prediction.get("claim_text"),
                                          decision=decision, comment=comment or None, reviewer=reviewer))
        if decision == "accept":
            result.accepted += 1
        else:
            result.rejected += 1
    plan = read_plan(out_dir)
    if plan and plan.get("kind") in ("estimate", "audit"):
        result.summary = summarise(out_dir, decision_files=decision_files or [])
    return result


def review_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (estimate, audit, scan or eval).")],
    reviewer: Annotated[Optional[str], typer.Option("--reviewer", help="Your name, stored with each decision.")] = None,
) -> None:
    """Accept or reject each flagged fact in the terminal (resumable; decisions in DIR/reviews.jsonl)."""
    result = review_run(run_dir, console, reviewer=reviewer)
    console.print(f"{result.accepted} accepted, {result.rejected} rejected, {result.skipped} skipped this session")
    if result.summary is not None:
        print_rates(result.summary, run_dir, False)
