"""Calibrated probabilities: a map from a system's inconsistency score to the probability that a
fact is inconsistent, fitted on a validation run (scikit-learn underneath).

:class:`Calibrator` is fitted by isotonic regression (a monotone step function; the default) or
Platt scaling (a logistic curve over the score), saved as ``calibrator.json`` in the run it
calibrates, and read back by ``agent.calibration`` — a calibrator file, or a validation run
directory to fit one from — so ``claire check`` and the web app show the calibrated probability
beside the raw score. The verdict itself stays the paper's: the raw score against the threshold.

A calibrator file is checked when read: isotonic points are at most :data:`MAX_POINTS` pairs in
[0, 1], sorted by score, whose probabilities never fall as the score rises; Platt's slope and
intercept are finite numbers, the slope not negative (either inverted would turn a high score
into a low probability). Anything else — and a validation run holding a score that is not a
number — is a one-line ConfigError.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from claire.errors import ConfigError
from claire.files import read_log

Method = Literal["isotonic", "platt"]
METHODS: tuple[str, ...] = ("isotonic", "platt")
FILE = "calibrator.json"
MAX_POINTS = 100_000  # an isotonic fit has at most one point per distinct validation score
MAX_FILE_BYTES = 16 * 1024 * 1024


@dataclass
class Calibrator:
    """A fitted score -> probability map: isotonic (``points``: the step function's corners) or
    Platt (``slope``, ``intercept`` of the logistic curve)."""

    method: str
    fitted_on: int
    source: str
    points: list[tuple[float, float]] = field(default_factory=list)
    slope: float | None = None
    intercept: float | None = None

    @classmethod
    def fit(cls, scores: np.ndarray, gold: np.ndarray, *, method: str = "isotonic", source: str = "") -> "Calibrator":
        """Fit on (score, gold) pairs of a validation run (gold 1 = inconsistent); both labels needed."""
        if method not in METHODS:
            raise ConfigError(f"unknown calibration method {method!r}; allowed: {', '.join(METHODS)}")
        if len(set(np.asarray(gold).tolist())) < 2:
            raise ConfigError(f"{source or 'the validation run'} cannot calibrate: it needs scored claims of both labels")
        scores = np.asarray(scores, dtype=float)
        if not np.isfinite(scores).all() or scores.min() < 0 or scores.max() > 1:
            raise ConfigError(f"{source or 'the validation run'} cannot calibrate: a score is not a number in [0, 1]")
        if method == "platt":
            model = LogisticRegression().fit(scores.reshape(-1, 1), gold)
            slope = float(model.coef_[0][0])
            if slope < 0:
                raise ConfigError(f"{source or 'the validation run'} cannot calibrate with platt: its inconsistent claims "
                                  "score lower than its consistent ones, so the curve would invert every score")
            return cls(method, len(scores), source, slope=slope, intercept=float(model.intercept_[0]))
        fitted = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(scores, gold)
        points = [(float(x), float(y)) for x, y in zip(fitted.X_thresholds_, fitted.y_thresholds_)]
        return cls(method, len(scores), source, points=points)

    def probability(self, score: float) -> float:
        """The calibrated probability that a fact with this score is inconsistent."""
        return float(self.probabilities(np.array([score], dtype=float))[0])

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        """:meth:`probability` of every score."""
        scores = np.asarray(scores, dtype=float)
        if self.method == "platt":
            return 1.0 / (1.0 + np.exp(-((self.slope or 0.0) * scores + (self.intercept or 0.0))))
        xs, ys = zip(*self.points) if self.points else ((0.0,), (0.0,))
        return np.clip(np.interp(scores, xs, ys), 0.0, 1.0)

    def save(self, path: Path) -> None:
        """Write the calibrator as JSON."""
        Path(path).write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "Calibrator":
        """Read a calibrator written by :meth:`save` (a ConfigError saying what is wrong with any
        other file)."""
        try:
            if Path(path).stat().st_size > MAX_FILE_BYTES:
                raise ConfigError(f"{path}: not a calibrator file (larger than {MAX_FILE_BYTES // 2**20} MB)")
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except ConfigError:
            raise
        except RecursionError:
            raise ConfigError(f"{path}: not a calibrator file (its JSON is nested too deeply)") from None
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: not a calibrator file ({error})") from None
        try:
            return cls.from_dict(data)
        except ValueError as error:
            raise ConfigError(f"{path}: not a usable calibrator: {error}") from None

    @classmethod
    def from_dict(cls, data: Any) -> "Calibrator":
        """A calibrator from its JSON data, checked (a ValueError saying what is wrong)."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        unknown = set(data) - {"method", "fitted_on", "source", "points", "slope", "intercept"}
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(sorted(map(repr, unknown)))}")
        method = data.get("method")
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}")
        fitted_on = data.get("fitted_on", 0)
        if isinstance(fitted_on, bool) or not isinstance(fitted_on, int) or not 0 <= fitted_on <= 10**12:
            raise ValueError("fitted_on must be a count of claims")
        source = data.get("source", "")
        if not isinstance(source, str):
            raise ValueError("source must be text")
        if method == "platt":
            slope, intercept = _number(data.get("slope"), "slope"), _number(data.get("intercept"), "intercept")
            if slope < 0:
                raise ValueError("a negative slope would turn high scores into low probabilities")
            return cls(method, fitted_on, source, slope=slope, intercept=intercept)
        return cls(method, fitted_on, source, points=_points(data.get("points")))


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or abs(number) > 1e6:
        raise ValueError(f"{what} must be a finite number of a sensible size")
    return number


def _points(value: Any) -> list[tuple[float, float]]:
    """Isotonic points as (score, probability) pairs: sorted by score, in [0, 1], probabilities
    never falling; a ValueError saying what is wrong otherwise."""
    if not isinstance(value, list) or not value:
        raise ValueError("an isotonic calibrator needs a list of [score, probability] points")
    if len(value) > MAX_POINTS:
        raise ValueError(f"{len(value):,} points (at most {MAX_POINTS:,})")
    points = []
    for number, point in enumerate(value):
        if not isinstance(point, list) or len(point) != 2:
            raise ValueError(f"point {number} is not a [score, probability] pair")
        x, y = _number(point[0], f"point {number}'s score"), _number(point[1], f"point {number}'s probability")
        if not (0 <= x <= 1 and 0 <= y <= 1):
            raise ValueError(f"point {number} ({x:g}, {y:g}) is outside [0, 1]")
        if points and x < points[-1][0]:
            raise ValueError(f"the points are not sorted by score (point {number})")
        if points and y < points[-1][1]:
            raise ValueError(f"the probability falls as the score rises at point {number}, which would invert scores")
        points.append((x, y))
    return points


def scored_pairs(predictions: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(scores, gold) of the predictions with a score in [0, 1], a gold label and no error."""
    kept = [p for p in predictions if p.get("error") is None and p.get("score") is not None and p.get("label")]
    try:
        scores = np.array([float(p["score"]) for p in kept], dtype=float)
    except (TypeError, ValueError):
        raise ConfigError("a prediction's score is not a number: nothing to calibrate") from None
    gold = np.array([p["label"] == "inconsistent" for p in kept], dtype=int)
    if not np.isfinite(scores).all():
        raise ConfigError("a prediction's score is not a finite number (NaN or infinite): nothing to calibrate")
    if len(scores) and (scores.min() < 0 or scores.max() > 1):
        raise ConfigError("these scores are not in [0, 1] (the NLI pipeline counts REFUTES): nothing to calibrate")
    return scores, gold


def load_calibration(path: str | Path) -> Calibrator:
    """The calibrator ``agent.calibration`` names: a calibrator file, a run directory holding one,
    or a validation run directory to fit one from (isotonic; one prediction per claim, the last
    line of a claim winning as in every reading of a run)."""
    path = Path(path)
    if path.is_file():
        return Calibrator.load(path)
    if (path / FILE).is_file():
        return Calibrator.load(path / FILE)
    predictions_file = path / "predictions.jsonl"
    if not predictions_file.is_file():
        raise ConfigError(f"agent.calibration: {path} is neither a calibrator file nor a run directory of `claire eval`")
    latest = {line.get("claim_id"): line for line in read_log(predictions_file) if isinstance(line, dict)}
    scores, gold = scored_pairs(list(latest.values()))
    return Calibrator.fit(scores, gold, source=str(path))
