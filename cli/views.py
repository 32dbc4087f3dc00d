"""Terminal views for the ``claire`` command (rich): the live step view and final verdict of a
check, the interactive review prompt, and ranked search results. Used only by ``cli.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from claire.agent.runtime import open_system
from claire.domain import Assessment, Claim
from claire.llm.usage import Usage, track_usage
from claire.config import Config
from claire.errors import ConfigError


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
    """A table of search hits."""
    table = Table(title=Text(f"results for: {query}"), title_justify="left", show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=7)
    table.add_column("article > section", ratio=1, overflow="fold")
    table.add_column("passage", ratio=3)
    for hit in hits:
        block = hit.block
        where = Text.assemble((block.document_title, "bold"), "\n" + block.section_title,
                              ("\n" + block.block_type, "dim") if block.block_type != "text" else "")
        content = block.content if len(block.content) <= 400 else block.content[:399] + "…"
        table.add_row(str(hit.rank), f"{hit.score:.3f}", where, Text(content))
    if not hits:
        table.add_row("", "", "no results", "")
    return table


class CheckView:
    """Runs one check, printing each step as it happens, then renders the verdict."""

    def __init__(self, console: Console, claim: Claim | None, config: Config, *, quiet: bool = False,
                 resume: str | None = None):
        self.console = console
        self.resume = resume  # the thread of a saved interactive check to go on with
        self.claim = claim
        self.config = config
        self.quiet = quiet
        self.count = 0
        self.status: Any = None
        self.llm_total: Usage | None = None

    def on_step(self, event: dict[str, Any]) -> None:
        """Show one research step as it is taken."""
        item = event["item"]
        self.count += 1
        output = item["action_output"] if item["action_name"] in ("search", "verifier", "nli") else event.get("observation") or item["action_output"]
        tokens = f" · {self.llm_total.total_tokens} tokens" if self.llm_total else ""
        line = Text.assemble(
            (f"{self.count:>3} ", "dim"), (f"{item['action_name']:<21}", "bold cyan"),
            (one_line(item["action_argument"], 48) + "  ", ""), ("→ " + one_line(output, 70), "dim"),
            (f"  [{event['documents']} docs{tokens}]", "dim"),
        )
        self.console.print(line, overflow="ellipsis", no_wrap=True)

    async def review(self, request: dict[str, Any]) -> str:
        """Ask the person about a reported inconsistency (the graph is paused meanwhile)."""
        if self.status:
            self.status.stop()
        self.console.print(Panel(Text(request["evidence"]), title="the agent reports an inconsistency", border_style="yellow"))
        choice = await asyncio.to_thread(Prompt.ask, "\\[a]ccept, \\[r]eject, or type a comment", console=self.console, default="accept")
        if self.status:
            self.status.start()
        answer = choice.strip()
        if answer.lower() in ("a", "accept", "y", "yes"):
            return "accepted: the reviewer agrees this is a contradiction."
        if answer.lower() in ("r", "reject", "n", "no"):
            return "rejected: the reviewer does not think this is a contradiction; keep researching."
        return f"comment: {answer}"

    async def run(self) -> Assessment:
        """Check the claim (or resume a saved check) with the live view."""
        reviewer = self.review if self.config.agent.review else None
        on_step = None if self.quiet else self.on_step
        async with open_system(self.config, reviewer=reviewer, on_step=on_step) as system:
            if self.resume is not None:
                if not hasattr(system, "resume"):
                    raise ConfigError(f"--resume works with the claire system, not {system.name}")
                assessment = await system.resume(self.resume)
                self.claim = Claim(claim_id=assessment.claim_id, text=assessment.claim_text)
                return assessment
            assert self.claim is not None
            kwargs: dict[str, Any] = {}
            if reviewer is not None and hasattr(system, "resume"):
                kwargs["thread_id"] = f"check-{uuid.uuid4().hex[:8]}"
                self.console.print(Text(f"progress is saved; if interrupted, go on with: claire check --resume {kwargs['thread_id']}", style="dim"))
            if self.quiet:
                return await system.assess(self.claim, **kwargs)
            self.console.print(Text.assemble(("checking with ", "dim"), (system.name, "bold"), (f": {self.claim.text}", "")))
            with self.console.status("researching…") as status, track_usage() as usage:
                self.status = status
                self.llm_total = usage
                return await system.assess(self.claim, **kwargs)

    def final(self, a: Assessment) -> None:
        """Print the result panel of an assessment."""
        c = self.console
        colour = {"inconsistent": "red", "consistent": "green"}.get(a.verdict or "", "yellow")
        score = "n/a" if a.score is None else (f"{a.score:g} REFUTES" if a.score_kind == "count" else f"{a.score:.2f}")
        calibrated = "" if a.probability is None else f"; calibrated probability {a.probability:.0%}"
        headline = Text.assemble((f" {(a.verdict or 'no verdict').upper()} ", f"bold white on {colour}"),
                                 f"  inconsistency score {score} (flagged above {a.threshold:g}{calibrated})")
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
        c.print(Panel(Group(*body), title="CLAIRE verdict", border_style=colour))
        if a.error:
            c.print(Text.assemble(("error: ", "red"), a.error))
        cited = self._cited(a)
        if a.evidence:
            table = Table(title="evidence", title_justify="left", show_lines=True, expand=True)
            table.add_column("\\[n]", width=4, justify="right")
            table.add_column("article > section", ratio=1)
            table.add_column("passage", ratio=3)
            for e in a.evidence:
                if cited and e.n not in cited:
                    continue
                where = Text.assemble((e.document_title, "bold"), "\n" + e.section_title)
                if e.url:
                    where.append("\n" + e.url, style=f"link {e.url}")
                table.add_row(str(e.n), where, Text(e.content[:500]))
            c.print(table)
            if cited:
                c.print(f"[dim]{len(a.evidence) - len([e for e in a.evidence if e.n in cited])} more passages were read but not cited[/]")
        for note in a.clarifications:
            c.print(Panel(Text(note["text"]), title=Text(f"clarified: {note['entity']}"), border_style="blue"))
        for item in a.reported:
            c.print(Panel(Text(item), title="reported inconsistency", border_style="red"))
        if a.reasoning:
            c.print(Panel(Markdown(a.reasoning), title="verifier analysis"))
        if a.report:
            c.print(Panel(Markdown(a.report["consistent"]), title="the case for consistent", border_style="green"))
            c.print(Panel(Markdown(a.report["inconsistent"]), title="the case for inconsistent", border_style="red"))
        usage = Usage.from_dict(a.usage)
        cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
        c.print(f"[dim]{a.details.get('steps', 0)} steps · {len(a.evidence)} passages · {usage.calls} LLM calls "
                f"({usage.cached_calls} cached) · {usage.total_tokens} tokens{cost} · {a.latency_s or 0:.1f} s[/]")

    @staticmethod
    def _cited(a: Assessment) -> set[int]:
        import re

        text = " ".join(filter(None, [a.reasoning, *(a.report or {}).values(), *a.reported]))
        return {int(n) for n in re.findall(r"\[(\d+)\]", text) if 0 < int(n) <= len(a.evidence)}


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
