"""What every task's scoring shares: LLM usage totals and latency percentiles over a run's
predictions, the "covers N of M claims" line, percentages as reports print them, and the names
of the files a run directory's outputs are written to."""

from __future__ import annotations

from typing import Any

import numpy as np

from claire.usage import REPAIRS, Usage

PREDICTIONS = "predictions.jsonl"
METRICS = "metrics.json"
REPORT = "report.md"
CALIBRATION = "calibration.png"
ROC = "roc.png"
DASH = "—"


def or_dash(value: Any, spec: str = "") -> str:
    """``value`` formatted with ``spec``, or a dash when it is unknown (None)."""
    return DASH if value is None else format(value, spec)


def usage_totals(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls, cached calls, tokens (with those the provider read from or wrote to its prompt cache,
    and those of answers CLAIRE's cache served) and cost summed over predictions (cost None when no
    price was known; ``uncached_cost_usd``: what a fresh run would cost). A prediction whose usage
    held impossible figures (negative, not a number, infinite, more cached than sent) adds only its
    believable ones, and ``unbelievable`` counts them."""
    total, unbelievable = Usage(), 0
    for prediction in predictions:
        usage, problems = Usage.read(prediction.get("usage"))
        total.add(usage)
        unbelievable += bool(problems)
    totals = total.to_dict()
    totals["uncached_cost_usd"] = total.uncached_cost_usd
    totals["events"] = dict(sorted(total.events.items()))
    totals["unbelievable"] = unbelievable
    return totals


def token_summary(usage: dict[str, Any]) -> str:
    """A run's tokens in words: total, prompt and completion, and of the prompt tokens those the
    provider served from its prompt cache (and wrote to it) when it said so."""
    prompt = usage.get("prompt_tokens") or 0
    text = f"{usage.get('total_tokens') or 0:,} ({prompt:,} prompt, {usage.get('completion_tokens') or 0:,} completion)"
    read, written = usage.get("cache_read_tokens") or 0, usage.get("cache_write_tokens") or 0
    if read or written:
        text += f"; of the prompt tokens {read:,} ({read / max(prompt, 1):.0%}) read from the provider's prompt cache"
        text += f" and {written:,} written to it" if written else ""
    served = (usage.get("cached_prompt_tokens") or 0) + (usage.get("cached_completion_tokens") or 0)
    if served:
        text += f"; and {served:,} more in the answers CLAIRE's cache served (a fresh run sends them too)"
    return text


def cost_summary(usage: dict[str, Any]) -> str:
    """What a run paid and, when CLAIRE's cache served answers, what a fresh run would cost."""
    paid, uncached = usage.get("cost_usd"), usage.get("uncached_cost_usd")
    if usage.get("cached_calls") and uncached is not None and uncached != paid:
        return f"{money(paid)} this run; {money(uncached)} uncached (what a fresh run would be billed)"
    return money(paid)


def robustness(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """What reading a real model's answers took over a run: answers read only after a repair or a
    re-ask, invalid or repeated tool calls, refusals, and the claims that needed any of it."""
    def count(prediction: dict[str, Any], kinds: tuple[str, ...]) -> int:
        events = (prediction.get("usage") or {}).get("events") or {}
        return sum(int(events.get(kind) or 0) for kind in kinds)

    repaired = tuple(REPAIRS) + ("reasked",)
    bad_calls = ("invalid_action", "repeated_action")
    return {
        "repaired_or_reasked": sum(count(p, repaired) for p in predictions),
        "reasked": sum(count(p, ("reasked",)) for p in predictions),
        "invalid_or_repeated_calls": sum(count(p, bad_calls) for p in predictions),
        "refusals": sum(count(p, ("refusal",)) for p in predictions),
        "claims_affected": sum(1 for p in predictions if count(p, repaired + bad_calls + ("refusal",))),
    }


def latency_summary(predictions: list[dict[str, Any]]) -> dict[str, float | None]:
    """Sum, mean, p50 and p95 of the claims' latencies in seconds (None when none is known)."""
    values = np.array([p["latency_s"] for p in predictions if p.get("latency_s") is not None], dtype=float)
    if not len(values):
        return {"sum": None, "mean": None, "p50": None, "p95": None}
    return {
        "sum": float(values.sum()),
        "mean": float(values.mean()),
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
    }


def covers(total: int, scored: int, errors: int) -> str:
    """``"9 of 11 claims (2 errors left out)"``."""
    left_out = [f"{errors} error{'s' * (errors != 1)}"] if errors else []
    if total - scored - errors:
        left_out.append(f"{total - scored - errors} without a score or gold label")
    return f"{scored} of {total} claims" + (f" ({' and '.join(left_out)} left out)" if left_out else "")


def money(value: float | None) -> str:
    """A cost in dollars, or a dash."""
    return DASH if value is None else f"${value:,.4f}"


def seconds(value: float | None) -> str:
    """A duration in seconds, or a dash."""
    return DASH if value is None else f"{value:,.2f} s"


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, or a dash."""
    return DASH if value is None else f"{100 * value:.1f}"


def auroc_text(metrics: dict[str, Any]) -> str:
    """AUROC x100 with its bootstrap interval: ``78.1 (70.2–85.0)``."""
    ci = metrics.get("auroc_ci95")
    text = pct(metrics.get("auroc"))
    return f"{text} ({pct(ci[0])}–{pct(ci[1])})" if ci else text
