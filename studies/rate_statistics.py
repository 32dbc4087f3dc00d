"""Statistics for estimating how much of a corpus is inconsistent (the paper's section 5).

- :func:`cochran_sample_size`: how many facts to sample for a margin of error at a confidence,
  with an optional finite-population correction (664 for 99%, ±5%, p = 0.5).
- :func:`estimate_rate`: a share ``k / n`` with the normal-approximation ("Wald") margin the
  paper reports (23 of 700 at 99% → 3.3% ± 1.7% [1.6%, 5.0%]) and, beside it, the Wilson score
  interval, which stays inside [0, 1] and keeps its coverage at small rates.
- :func:`extrapolate`: from facts found per sampled unit (block or article) and the corpus size
  to the number of facts in the corpus and how many of them the rate implies.

Quantiles and the Wilson interval come from scipy.
"""

from __future__ import annotations

import math

from pydantic import BaseModel
from scipy.stats import binomtest, norm

from claire.errors import ConfigError


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile for ``confidence`` (2.576 for 0.99)."""
    _check_confidence(confidence)
    return float(norm.ppf(1 - (1 - confidence) / 2))


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ConfigError(f"the confidence must be between 0 and 1 (e.g. 0.99), got {confidence}")


MIN_MARGIN = 1e-6
"""The smallest margin of error asked for (it already needs over a trillion facts)."""
MAX_COUNT = 10**15
"""The most facts a sample or population may count (the interval arithmetic is in 64-bit numbers)."""


def cochran_sample_size(
    confidence: float = 0.99, margin: float = 0.05, p: float = 0.5, population: int | None = None
) -> int:
    """Cochran's n0 = z² p (1 - p) / e², rounded up; with ``population`` N the finite-population
    correction n = n0 / (1 + (n0 - 1) / N), rounded up."""
    if not MIN_MARGIN <= margin < 1:
        raise ConfigError(f"the margin of error must be from {MIN_MARGIN:g} to below 1 (e.g. 0.05), got {margin:g}")
    if not 0 < p < 1:
        raise ConfigError(f"the expected proportion --p must be between 0 and 1, got {p}")
    if population is not None and population < 1:
        raise ConfigError(f"the population must be at least 1, got {population}")
    z = z_value(confidence)
    n0 = z * z * p * (1 - p) / (margin * margin)
    if population is not None:
        n0 = n0 / (1 + (n0 - 1) / population)
    # round away float noise before the ceiling (663.4999999 must not become 664 by accident either way)
    return max(1, math.ceil(round(n0, 9)))


class RateEstimate(BaseModel):
    """A share ``count / total`` with its normal-approximation and Wilson intervals."""

    count: int
    total: int
    confidence: float
    rate: float
    margin: float  # half-width of the normal-approximation interval
    low: float  # normal approximation, clipped to [0, 1]
    high: float
    wilson_low: float
    wilson_high: float
    population: int | None = None  # when set, the normal margin has the finite-population correction

    def paper_form(self, digits: int = 1) -> str:
        """``3.3% ± 1.7% [1.6%, 5.0%]``: the rate, its margin and the normal interval, in percent."""
        return (f"{_pct(self.rate, digits)} ± {_pct(self.margin, digits)} "
                f"[{_pct(self.low, digits)}, {_pct(self.high, digits)}]")

    def wilson_form(self, digits: int = 1) -> str:
        """The Wilson interval as text, like the paper's form."""
        return f"[{_pct(self.wilson_low, digits)}, {_pct(self.wilson_high, digits)}]"


def _pct(value: float, digits: int) -> str:
    # round half up on the percentage (1.55 -> 1.6), after removing float noise
    scaled = round(value * 100, 9) * 10**digits
    return f"{math.floor(scaled + 0.5) / 10**digits:.{digits}f}%"


def estimate_rate(count: int, total: int, confidence: float = 0.99, population: int | None = None) -> RateEstimate:
    """The share ``count / total`` with the normal-approximation margin z·sqrt(p(1-p)/n) (times
    sqrt((N-n)/(N-1)) when a finite ``population`` N is given) and the Wilson score interval."""
    _check_confidence(confidence)
    if not 1 <= total <= MAX_COUNT:
        raise ConfigError(f"the total must be from 1 to {MAX_COUNT:.0e} facts, got {total}")
    if population is not None and population > MAX_COUNT:
        raise ConfigError(f"the population must be at most {MAX_COUNT:.0e}, got {population}")
    if not 0 <= count <= total:
        raise ConfigError(f"the count must be between 0 and the total ({total}), got {count}")
    if population is not None and population < total:
        raise ConfigError(f"the population ({population}) cannot be smaller than the sample ({total})")
    z = z_value(confidence)
    rate = count / total
    margin = z * math.sqrt(rate * (1 - rate) / total)
    if population is not None and population > 1:
        margin *= math.sqrt((population - total) / (population - 1))
    wilson = binomtest(count, total).proportion_ci(confidence_level=confidence, method="wilson")
    return RateEstimate(
        count=count, total=total, confidence=confidence, rate=rate, margin=margin,
        low=max(0.0, rate - margin), high=min(1.0, rate + margin),
        wilson_low=float(wilson.low), wilson_high=float(wilson.high), population=population,
    )


class Extrapolation(BaseModel):
    """What a rate measured on sampled facts says about the whole corpus."""

    unit: str  # "block" or "article"
    units_sampled: int  # units whose facts were extracted
    facts_found: int  # facts extracted from them
    facts_per_unit: float
    corpus_units: int
    corpus_facts: float  # estimated facts in the corpus
    inconsistent: float  # rate x corpus facts
    inconsistent_low: float  # Wilson bounds x corpus facts
    inconsistent_high: float
    normal_low: float | None = None  # the normal-approximation interval x corpus facts (the paper's form)
    normal_high: float | None = None


def extrapolate(rate: RateEstimate, *, unit: str, units_sampled: int, facts_found: int, corpus_units: int) -> Extrapolation:
    """Estimated facts in the corpus (facts per sampled unit × units) and the inconsistent ones the
    rate implies, with the normal-approximation bounds (as the paper gives them) and the Wilson
    bounds. The uncertainty of facts per unit is not included."""
    if units_sampled < 1:
        raise ConfigError("no sampled unit had its facts extracted, so nothing can be extrapolated")
    per_unit = facts_found / units_sampled
    facts = per_unit * corpus_units
    return Extrapolation(
        unit=unit, units_sampled=units_sampled, facts_found=facts_found, facts_per_unit=per_unit,
        corpus_units=corpus_units, corpus_facts=facts, inconsistent=rate.rate * facts,
        inconsistent_low=rate.wilson_low * facts, inconsistent_high=rate.wilson_high * facts,
        normal_low=rate.low * facts, normal_high=rate.high * facts,
    )
