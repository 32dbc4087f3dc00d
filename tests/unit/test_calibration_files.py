"""Calibrator files: malformed, hostile or mismatched ones are refused with a clear message."""

from __future__ import annotations




import json


import numpy as np
import pytest


from claire.errors import ConfigError

from claire.tasks.calibration import Calibrator, load_calibration, scored_pairs
from claire.tasks.wikicollide.scoring import recalibrate


# -- calibrator files ---------------------------------------------------------------------------

FITTED = {"fitted_on": 4, "source": "runs/validation"}


@pytest.mark.parametrize("content, problem", [
    ({**FITTED, "method": "isotonic", "points": [[0, 1], [1, 0]]}, "invert"),
    ({**FITTED, "method": "isotonic", "points": [[0.5, 0.2], [0.1, 0.3]]}, "not sorted"),
    ({**FITTED, "method": "isotonic", "points": [[0, 0], [1, 1.5]]}, "outside"),
    ({**FITTED, "method": "isotonic", "points": [[0, 0], [1]]}, "pair"),
    ({**FITTED, "method": "isotonic", "points": [[i / 200_000, i / 200_000] for i in range(200_001)]}, "at most"),
    ({**FITTED, "method": "platt", "slope": "abc", "intercept": 0}, "slope must be a number"),
    ({**FITTED, "method": "platt", "slope": -3.0, "intercept": 0}, "negative slope"),
    ({**FITTED, "method": "platt", "slope": 2, "intercept": 0, "extra": 1}, "unknown"),
    ('{"fitted_on": 4, "source": "v", "method": "platt", "slope": 1' + "0" * 400 + ', "intercept": 0}', "finite"),
    ('{"fitted_on": 4, "source": "v", "method": "platt", "slope": NaN, "intercept": 0}', "finite"),
    ("[" * 50_000 + "]" * 50_000, "nested"),
    ('"just text"', "not a JSON object"),
])
def test_a_calibrator_file_is_checked_and_refused_in_one_line(tmp_path, content, problem):
    path = tmp_path / "calibrator.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as error:
        load_calibration(path)
    assert "\n" not in str(error.value)


def test_a_valid_calibrator_still_loads_and_maps_scores():
    calibrator = Calibrator.from_dict({"method": "isotonic", "fitted_on": 4, "source": "v",
                                       "points": [[0.0, 0.1], [0.5, 0.1], [0.5, 0.4], [1.0, 0.9]]})
    assert calibrator.probability(1.0) == pytest.approx(0.9)


def test_a_validation_run_with_a_nan_score_is_a_config_error_not_a_scikit_learn_one():
    rows = [{"claim_id": str(i), "score": s, "label": label, "error": None}
            for i, (s, label) in enumerate([(0.9, "inconsistent"), (float("nan"), "consistent"), (0.1, "consistent")])]
    with pytest.raises(ConfigError, match="not a finite number"):
        scored_pairs(rows)
    with pytest.raises(ConfigError, match="runs/validation cannot calibrate"):
        recalibrate(rows[:1] + rows[2:], rows, source="runs/validation")
    with pytest.raises(ConfigError, match="invert"):
        Calibrator.fit(np.array([0.9, 0.8, 0.1, 0.2]), np.array([0, 0, 1, 1]), method="platt")
