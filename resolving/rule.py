"""The rule that decides which side of a contradiction is right, from the signals gathered for
each side (``docs/resolve.md`` explains it).

Each signal is a small function of one side (:class:`SideSignals`: its report, the sources that
state its value, whether its source is the newer one) and the weights (``resolve.*`` settings,
so a sweep can vary them); it gives a weight, the reason it adds to the card (or none) and what is
missing (or nothing). A side's strength is the sum of its signals' weights; :func:`decide` turns
the two strengths into a decision with a confidence. Adding a signal is adding a function to
:data:`SIGNALS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from claire.settings import ResolveConfig
from claire.resolving.values import source_key
from claire.tasks.sides.records import Decision, SideReport, SourceJudgement, Support

SIDES = ("fact", "passage")
OTHER = {"fact": "passage", "passage": "fact"}


@dataclass
class SideSignals:
    """What the signals read of one side."""

    name: str
    report: SideReport
    supporting: list[SourceJudgement]  # read sources that state its value, with a quote (either side's)
    newer: bool = False  # its newest supporting source is the newer one, for a fact that changes over time


@dataclass
class Signal:
    """One signal's answer for one side."""

    weight: float = 0.0
    reason: str | None = None
    missing: list[str] = field(default_factory=list)


def _weight(judgement: SourceJudgement, weights: ResolveConfig) -> float:
    return weights.tier_weights.get(judgement.tier, weights.tier_weights.get("not listed", 0.4))


def _by_site(side: SideSignals, weights: ResolveConfig) -> list[float]:
    """The best weight of each distinct source (:func:`~claire.resolving.values.source_key`) among the
    side's supporting sources, best first."""
    best: dict[str, float] = {}
    for judgement in side.supporting:
        key = source_key(judgement.reference, judgement.reference.title)
        best[key] = max(best.get(key, 0.0), _weight(judgement, weights))
    return sorted(best.values(), reverse=True)


def verified_source(side: SideSignals, weights: ResolveConfig) -> Signal:
    """The best source that states the side's value, by its tier; what is missing when none verifies it."""
    verified = [j for j in side.supporting if _weight(j, weights) >= weights.min_standing]
    side.report.verified = bool(verified)
    ranked = _by_site(side, weights)
    weight = ranked[0] if ranked else 0.0
    if verified:
        best = max(verified, key=lambda j: _weight(j, weights))
        more = f" and {len(verified) - 1} more" if len(verified) > 1 else ""
        return Signal(weight, f"the {side.name}'s value is stated by "
                              f"{best.reference.title or best.reference.url or 'a source'} ({best.tier}){more}")
    if side.supporting:
        tier = side.supporting[0].tier
        return Signal(weight, f"the {side.name}'s value is stated only by {tier} sources, which verify nothing",
                      [f"a reliable source for the {side.name}: only {tier} sources state its value"])
    return Signal(weight, None, _unverified(side))


def _unverified(side: SideSignals) -> list[str]:
    report, name = side.report, side.name
    if not report.sources:
        return [f"the {name} cites no source"]
    missing = []
    unread = [j for j in report.sources if j.support == Support.UNREADABLE]
    unknown = [j for j in report.sources if j.support == "unknown"]
    if unread:
        why = (unread[0].note or "unreadable").removeprefix("could not read: ")
        missing.append(f"the {name}'s sources could not be read ({why})")
    if unknown:
        missing.append(f"the {name}'s {len(unknown)} source{'s' if len(unknown) > 1 else ''} without a URL "
                       "could not be checked (a book? check it by hand)")
    if len(unread) + len(unknown) < len(report.sources):
        missing.append(f"the {name}'s readable sources do not state its value")
    return missing


def more_sites(side: SideSignals, weights: ResolveConfig) -> Signal:
    """A little for each further distinct site of standing that states the value (two count)."""
    further = sum(1 for w in _by_site(side, weights)[1:] if w >= weights.min_standing)
    return Signal(weights.more_sources * min(2, further))


def agreement(side: SideSignals, weights: ResolveConfig) -> Signal:
    """A little for each other independent source that gives the value (three count)."""
    count = len(side.report.agreeing)
    reason = (f"{count} other independent source{'s give' if count > 1 else ' gives'} the {side.name}'s value"
              if count else None)
    return Signal(weights.agreement * min(3, count), reason)


def recency(side: SideSignals, weights: ResolveConfig) -> Signal:
    """The newer verified side, for a fact that changes over time (the pair's reason says why)."""
    return Signal(weights.recency if side.newer else 0.0)


SIGNALS: list[Callable[[SideSignals, ResolveConfig], Signal]] = [verified_source, more_sites, agreement, recency]
"""The signals each side is weighed by, in the order their reasons are given."""


def _newest(judgements: Iterable[SourceJudgement]) -> str | None:
    dates = [j.date for j in judgements if j.date and re.match(r"\d{4}", j.date)]
    return max(dates) if dates else None


def decide(fact: SideReport, passage: SideReport, *, time_varying: bool, both_can_stand: bool = False,
           both_reason: str | None = None, weights: ResolveConfig | None = None,
           ) -> tuple[Decision, float, list[str], list[str]]:
    """The rule: (decision, confidence, reasons, what is missing). A winner always has a verified
    source; with none on either side, or two of about the same strength, it cannot tell."""
    weights = weights or ResolveConfig()
    reports = {"fact": fact, "passage": passage}
    supporting: dict[str, list[SourceJudgement]] = {name: [] for name in SIDES}
    for name, report in reports.items():
        for judgement in report.sources:
            if judgement.support == Support.STATES and judgement.quote:
                supporting[name].append(judgement)
            elif judgement.support == Support.CONTRADICTS and judgement.quote:
                supporting[OTHER[name]].append(judgement)  # a side's own source that gives the other value
    newest = {name: _newest(found) for name, found in supporting.items()}
    dated = bool(newest["fact"] and newest["passage"] and newest["fact"] != newest["passage"])
    newer = (max(SIDES, key=lambda name: newest[name] or "") if time_varying and dated else None)
    reasons: list[str] = []
    missing: list[str] = []
    for name in SIDES:
        side = SideSignals(name, reports[name], supporting[name], newer == name)
        signals = [signal(side, weights) for signal in SIGNALS]
        reports[name].strength = round(sum(s.weight for s in signals), 3)
        reasons += [s.reason for s in signals if s.reason]
        missing += [m for s in signals for m in s.missing]
    if newer is not None:
        reasons.append(f"the fact changes over time and the {newer}'s source is newer ({newest[newer]})")
    elif not time_varying and dated:
        reasons.append("the fact does not change over time, so a newer source counts for nothing")
    if both_can_stand:
        return "both", 0.7, [both_reason or "the model found that both statements can stand"] + reasons, []
    verified = [name for name in SIDES if reports[name].verified]
    if not verified:
        return "unknown", 0.0, reasons or ["neither side has a source that was read and states its value"], missing
    if len(verified) == 1:
        winner = verified[0]
    else:
        difference = fact.strength - passage.strength
        if abs(difference) < weights.margin:
            return ("unknown", 0.0, reasons + ["both sides have verified sources of about the same weight"],
                    missing + ["a source that settles it: both values are stated by sources of similar standing"])
        winner = "fact" if difference > 0 else "passage"
    difference = reports[winner].strength - reports[OTHER[winner]].strength
    confidence = round(min(0.95, max(0.55, 0.5 + 0.5 * difference)), 2)
    return winner, confidence, reasons, [m for m in missing if not m.startswith(f"the {winner}")]
