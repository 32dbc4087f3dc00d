"""Which threshold a run is scored with: 0.5 on validation (``agent.threshold``), a count of
REFUTES passages for a system whose scores are counts (``baselines.nli_threshold``), a value given
on the command line, or — as the paper does on test — the threshold that maximised F1 on a
validation run directory (the task picks it: :meth:`claire.tasks.base.Task.best_threshold`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claire.settings import AgentConfig, BaselineConfig
from claire.errors import ConfigError
from claire.runs.predictions import load_predictions, read_run_config
from claire.agent.registry import score_kind
from claire.domain import ScoreKind
from claire.tasks.base import Task
from claire.tasks.registry import get_task

PAPER_GRID = 0.1
"""The step of the thresholds the paper tries on validation for a paper-preset run (it reports 0.6,
0.5 and 1); a run of another preset takes the exact best-F1 threshold."""

THRESHOLD_SETTINGS: dict[str, str] = {"probability": "agent.threshold", "count": "baselines.nli_threshold"}
"""The setting that holds the validation threshold of each kind of score."""


def threshold_setting(kind: ScoreKind) -> str:
    """The setting that holds the threshold for scores of ``kind``."""
    return THRESHOLD_SETTINGS[kind]


def default_threshold(system: str, config_public: dict[str, Any] | None) -> float:
    """The validation threshold of a system: ``baselines.nli_threshold`` for a count of REFUTES
    passages, ``agent.threshold`` for a score, read from a run's public config when given."""
    if score_kind(system) == "count":
        value = ((config_public or {}).get("baselines") or {}).get("nli_threshold")
        return float(BaselineConfig().nli_threshold if value is None else value)
    value = ((config_public or {}).get("agent") or {}).get("threshold")
    return float(AgentConfig().threshold if value is None else value)


def resolve_threshold(
    system: str,
    *,
    task: Task | None = None,
    config_public: dict[str, Any] | None = None,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
) -> tuple[float, str]:
    """The threshold to score with and where it came from: given explicitly, the best-F1
    threshold of a validation run directory, or the system's default."""
    if threshold is not None and threshold_from is not None:
        raise ConfigError("give either a threshold or a validation run to take it from, not both")
    if threshold is not None:
        return float(threshold), "given"
    if threshold_from is not None:
        dev_config = read_run_config(threshold_from) or {}
        if dev_config.get("system") not in (None, system):
            raise ConfigError(
                f"{threshold_from} is a run of '{dev_config['system']}', not '{system}': "
                "take the threshold from a validation run of the same system"
            )
        grid = PAPER_GRID if ((dev_config.get("config") or {}).get("preset")) == "paper" else None
        value = (task or get_task(None)).best_threshold(load_predictions(threshold_from), score_kind(system), grid)
        return value, f"best F1 on {threshold_from}" + (f", over the paper's {grid:g} grid" if grid else "")
    if score_kind(system) == "count":
        return default_threshold(system, config_public), "a count of REFUTES passages, baselines.nli_threshold"
    return default_threshold(system, config_public), "the validation default, agent.threshold"
