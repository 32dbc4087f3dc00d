"""Calibrated probabilities: a map from a system's inconsistency score to the probability that a
fact is inconsistent, fitted on a validation run (scikit-learn underneath).

:class:`Calibrator` is fitted by isotonic regression (a monotone step function; the default) or
Platt scaling (a logistic curve over the score), saved as ``calibrator.json`` in the run it
calibrates, and read back by ``agent.calibration`` — a calibrator file, or a validation run
directory to fit one from — so ``claire check`` and the web app show the calibrated probability
beside the raw score. The verdict itself stays the paper's: the raw score against the threshold.
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
        if method == "platt":
            model = LogisticRegression().fit(np.asarray(scores, dtype=float).reshape(-1, 1), gold)
            return cls(method, len(scores), source, slope=float(model.coef_[0][0]), intercept=float(model.intercept_[0]))
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
        """Read a calibrator written by :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            calibrator = cls(**{**data, "points": [(float(x), float(y)) for x, y in data.get("points") or []]})
        except (OSError, ValueError, TypeError) as error:
            raise ConfigError(f"{path}: not a calibrator file ({error})") from None
        if calibrator.method not in METHODS or (calibrator.method == "isotonic" and not calibrator.points) or not all(
                math.isfinite(v) for point in calibrator.points for v in point) or (
                calibrator.method == "platt" and not all(math.isfinite(v or math.nan) for v in (calibrator.slope, calibrator.intercept))):
            raise ConfigError(f"{path}: not a usable calibrator")
        return calibrator


def scored_pairs(predictions: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(scores, gold) of the predictions with a score in [0, 1], a gold label and no error."""
    kept = [p for p in predictions if p.get("error") is None and p.get("score") is not None and p.get("label")]
    scores = np.array([float(p["score"]) for p in kept], dtype=float)
    gold = np.array([p["label"] == "inconsistent" for p in kept], dtype=int)
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
