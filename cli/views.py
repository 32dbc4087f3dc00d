"""Terminal views for the ``claire`` command (rich): the live step view and final verdict of a
check, the interactive review prompt, and ranked search results. Used only by ``cli.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from claire.cli.terminal import counted
from rich.console import Console, Group
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from claire.domain import Assessment, Claim
from claire.usage import Usage
from claire.config import Config


def one_line(value: Any, limit: int = 90) -> str:
    """Text flattened to one line and cut to ``limit`` characters."""
    if isinstance(value, list):
        titles = list(dict.fromkeys(str(v.get("document_title")) for v in value if isinstance(v, dict)))
        text = f"{len(value)} passages: " + "; ".join(titles[:4]) + (" …" if len(titles) > 4 else "") if value else "no passages"
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={v}" for k, v in value.items() if k != "analysis")
    else:
        text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hits_table(hits: list[Any], query: str) -> Table:
    """A table of search hits; when they come from several editions, each names its language."""
    table = Table(title=Text(f"results for: {query}"), title_justify="left", show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=7)
    table.add_column("article > section", ratio=1, overflow="fold")
    table.add_column("passage", ratio=3)
    editions = {hit.block.language for hit in hits}
    for hit in hits:
        block = hit.block
        edition = f" ({block.language})" if len(editions) > 1 and block.language else ""
        where = Text.assemble((block.document_title, "bold"), edition, "\n" + block.section_title,
                              ("\n" + block.block_type, "dim") if block.block_type != "text" else "")
        content = block.content if len(block.content) <= 400 else block.content[:399] + "…"
        table.add_row(str(hit.rank), f"{hit.score:.3f}", where, Text(content))
    if not hits:
        table.add_row("", "", "no results", "")
    return table


def evidence_blocks(passages: list[Any], width: int) -> list[Any]:
    """Passages as blocks a narrow terminal keeps whole: ``[n] article › section``, the address
    on a line of its own (the full address, also a link where the terminal supports links), then
    the passage. ``passages`` are Evidence objects or dicts with the same fields."""
    parts: list[Any] = []
    for item in passages:
        field = item.get if isinstance(item, dict) else lambda key, default=None: getattr(item, key, default)
        where = " › ".join(part for part in (field("document_title"), field("section_title")) if part)
        parts.append(Text.assemble((f"[{field('n')}] ", "bold"), (where, "bold")))
        url = field("url")
        if url:
            parts.append(Text(url, style=f"link {url}", no_wrap=True, overflow="ignore"))
        content = " ".join(str(field("content") or "").split())
        limit = max(width * 6, 300)
        parts.append(Padding(Text(content if len(content) <= limit else content[: limit - 1] + "…"), (0, 0, 1, 4)))
    return parts


class CheckView:
    """What a person sees of one check: what the command is doing from the start (reading the
    configuration, loading the agent, building the demo index, opening the index), each step as it
    happens, a flagged verdict put to the person with its case, then the result. The check itself
    runs in :mod:`claire.cli.check`, through the executor."""

    def __init__(self, console: Console, claim: Claim | None, config: Config, *, quiet: bool = False,
                 resume: str | None = None, status: Any = None, started: float | None = None):
        self.console = console
        self.resume = resume  # the thread of a saved interactive check to go on with
        self.claim = claim
        self.config = config
        self.quiet = quiet
        self.count = 0
        self.status = status  # the one status line of the command (a StatusLine), or None
        self.started = started if started is not None else time.monotonic()
        self.llm_total: Usage | None = None
        self.shown_case = False  # the case was printed for the review: the result does not repeat it

    def say(self, what: str) -> None:
        """What the command is doing now, on its status line."""
        if self.status is not None:
            self.status.update(what)

    def on_step(self, event: dict[str, Any]) -> None:
        """Show one research step as it is taken: the action and its argument on one line, what it
        observed on the next (each cut to the terminal's width)."""
        item = event["item"]
        if item["action_name"] == "human_review":  # the person's own answer, just given
            return
        self.count += 1
        output = item["action_output"] if item["action_name"] in ("search", "verifier", "nli") else event.get("observation") or item["action_output"]
        tokens = f" · {self.llm_total.total_tokens} tokens" if self.llm_total else ""
        width = self.console.width
        tail = f"  [{event['documents']} docs{tokens}]"
        head = f"{self.count:>3} {item['action_name']} "
        argument = one_line(item["action_argument"], max(width - len(head) - len(tail), 10))
        self.console.print(Text.assemble((f"{self.count:>3} ", "dim"), (f"{item['action_name']} ", "bold cyan"), argument,
                                         (tail, "dim")), overflow="ellipsis", no_wrap=True)
        self.console.print(Text("    → " + one_line(output, max(width - 6, 10)), style="dim"), overflow="ellipsis", no_wrap=True)

    async def review(self, case: dict[str, Any]) -> dict[str, Any]:
        """Show a flagged verdict's case — the passages it cites, the verifier's analysis, what the
        agent reported, the case that the fact holds — then ask whether the contradiction is real (the
        graph is paused meanwhile)."""
        if self.status:
            self.status.stop()
        c = self.console
        score = "n/a" if case.get("score") is None else f"{case['score']:.2f}"
        c.print(Text.assemble((" INCONSISTENT ", "bold white on red"), f"  inconsistency score {score}: ", case.get("claim") or ""))
        passages = case.get("passages") or []
        if passages:
            c.print(Text("the passages it cites", style="bold underline"))
            for part in evidence_blocks(passages, c.width):
                c.print(part, soft_wrap=isinstance(part, Text) and part.no_wrap)
        if case.get("analysis"):
            c.print(Panel(Markdown(case["analysis"]), title="the verifier's case"))
        for text in case.get("reports") or []:
            c.print(Panel(Text(text), title="the agent reported", border_style="yellow"))
        report = case.get("report") or {}
        if report.get("consistent"):
            c.print(Panel(Markdown(report["consistent"]), title="the case that it holds", border_style="green"))
        self.shown_case = True
        while True:
            choice = await asyncio.to_thread(
                Prompt.ask, "Is it a contradiction? \\[c] confirmed / \\[n] not a contradiction",
                console=c)
            answer = choice.strip().lower()
            if answer in ("c", "confirm", "confirmed", "a", "accept", "y", "yes"):
                decision = "accept"
                break
            if answer in ("n", "not", "no", "r", "reject"):
                decision = "reject"
                break
            c.print("please answer c or n")
        question = ("comment (optional; it goes back to the agent, which researches on)" if decision == "reject"
                    else "comment (optional)")
        comment = await asyncio.to_thread(Prompt.ask, question, console=c, default="", show_default=False)
        if self.status:
            self.status.start()
        return {"decision": decision, "comment": comment.strip() or None}

    def final(self, a: Assessment) -> None:
        """Print the result of an assessment: the verdict (the reviewer's, when there was a review,
        saying what it changed), the evidence and the analyses (unless the review showed them)."""
        c = self.console
        review = a.details.get("review")
        verdict = review["verdict"] if review else a.verdict
        colour = {"inconsistent": "red", "consistent": "green"}.get(verdict or "", "yellow")
        score = "n/a" if a.score is None else (f"{a.score:g} REFUTES" if a.score_kind == "count" else f"{a.score:.2f}")
        calibrated = "" if a.probability is None else f"; calibrated probability {a.probability:.0%}"
        measured = f"inconsistency score {score} (flagged above {a.threshold:g}{calibrated})"
        if review and review["verdict"] != a.verdict:  # the person overturned the verdict: say so first
            measured = f"by your review (the verifier's inconsistency score: {score}, flagged above {a.threshold:g}{calibrated})"
        elif review:
            measured = f"confirmed by your review · {measured}"
        headline = Text.assemble((f" {(verdict or 'no verdict').upper()} ", f"bold white on {colour}"), f"  {measured}")
        if a.label is not None:  # task feverous: the three-way label and the cited element ids
            colour = {"REFUTES": "red", "SUPPORTS": "green"}.get(a.label, "yellow")
            headline = Text.assemble((f" {a.label} ", f"bold white on {colour}"),
                                     f"  evidence: {', '.join(a.evidence_elements) or 'none cited'}")
        claim = self.claim
        where = claim.context.document_title + (f" > {claim.context.section_title}" if claim.context.section_title else "")
        body: list[Any] = [headline, Text(""), Text.assemble(("Fact: ", "bold"), claim.text)]
        if where:
            body.append(Text.assemble(("From: ", "bold"), where))
        if a.restated_claim:
            body.append(Text.assemble(("Restated: ", "bold"), a.restated_claim))
        if review:
            body.append(Text.assemble(("Your review: ", "bold"), review_effect(review)))
            if review.get("comment"):
                body.append(Text.assemble(("Your comment: ", "bold"), review["comment"]))
        c.print(Panel(Group(*body), title="CLAIRE verdict", border_style=colour))
        if a.error:
            c.print(Text.assemble(("error: ", "red"), a.error))
        if not self.shown_case:
            cited = self._cited(a)
            shown = [e for e in a.evidence if not cited or e.n in cited]
            if shown:
                c.print(Text("evidence", style="bold underline"))
                for part in evidence_blocks(shown, c.width):
                    c.print(part, soft_wrap=isinstance(part, Text) and part.no_wrap)
                if cited:
                    c.print(f"[dim]{len(a.evidence) - len(shown)} more passages were read but not cited[/]")
        for note in a.clarifications:
            c.print(Panel(Text(note["text"]), title=Text(f"clarified: {note['entity']}"), border_style="blue"))
        if not self.shown_case:
            for item in a.reported:
                c.print(Panel(Text(item), title="reported inconsistency", border_style="red"))
            if a.reasoning:
                c.print(Panel(Markdown(a.reasoning), title="verifier analysis"))
        if a.report:
            if not self.shown_case:
                c.print(Panel(Markdown(a.report["consistent"]), title="the case for consistent", border_style="green"))
            c.print(Panel(Markdown(a.report["inconsistent"]), title="the case for inconsistent", border_style="red"))
        usage = Usage.from_dict(a.usage)
        cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
        total = time.monotonic() - self.started
        took = f"{a.latency_s or 0:.1f} s checking"
        if total > (a.latency_s or 0) + 1:
            took += f", {total:.1f} s in all"
        steps = self.count or a.details.get("steps", 0)  # the steps numbered above, when they were shown
        c.print(f"[dim]{counted(steps, 'step')} · {counted(len(a.evidence), 'passage')} · "
                f"{counted(usage.calls, 'LLM call')} ({usage.cached_calls} cached) · {counted(usage.total_tokens, 'token')}"
                f"{cost} · {took}[/]")

    @staticmethod
    def _cited(a: Assessment) -> set[int]:
        import re

        text = " ".join(filter(None, [a.reasoning, *(a.report or {}).values(), *a.reported]))
        return {int(n) for n in re.findall(r"\[(\d+)\]", text) if 0 < int(n) <= len(a.evidence)}


def review_effect(review: dict[str, Any]) -> str:
    """What a person's review of a flagged verdict decided and changed, in one sentence."""
    before, after = review.get("system_verdict"), review.get("verdict")
    said = "contradiction confirmed" if review.get("decision") == "accept" else "not a contradiction"
    if review.get("continued"):
        return (f"{said}; your comment went back to the agent, which researched on, and the verdict after that "
                f"research is {(after or 'none').upper()}.")
    if before == after or after is None:
        return f"{said}; the verdict stays {(before or 'none').upper()}."
    code = {"inconsistent": 1, "consistent": 0}
    return (f"{said}; the verdict changes from {before.upper()} to {after.upper()} (the verifier's score is kept) "
            f"and the exit code from {code.get(before, 0)} to {code.get(after, 0)}.")


def citation_view(result: Any) -> Group:
    """The answer of ``claire cite``: the verdict, the original source's support, the suggestions."""
    style = {"supported": "bold green", "better source found": "bold yellow", "not supported": "bold red"}
    original = result.original
    score = "—" if original.score is None else f"{original.score:.2f}"
    head = Text.assemble(((result.verdict or "no verdict").upper(), style.get(result.verdict or "", "bold")),
                         f"   original source: support {score} (threshold {result.threshold:g})",
                         f", rank {original.rank}" if original.rank else "")
    parts: list[Any] = [head]
    if original.error:
        parts.append(Text(f"error: {original.error}", style="red"))
    if original.sentence:
        parts.append(Text.assemble(("supporting sentence: ", "dim"), original.sentence))
    if original.analysis:
        parts.append(Text.assemble(("analysis: ", "dim"), original.analysis))
    table = Table(title="suggested sources, best supported first", title_justify="left", show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("support", justify="right", width=7)
    table.add_column("source", ratio=1, overflow="fold")
    table.add_column("supporting passage", ratio=3)
    for scored in result.suggestions:
        where = Text.assemble((scored.title, "bold"), "\n" + (scored.url or ""))
        passage = scored.sentence or scored.passage or ""
        table.add_row(str(scored.rank or ""), "—" if scored.score is None else f"{scored.score:.2f}", where,
                      Text(passage if len(passage) <= 400 else passage[:399] + "…"))
    if not result.suggestions:
        table.add_row("", "", "no candidate sources found in the index", "")
    parts.append(table)
    return Group(*parts)
