"""Which threshold a run is scored with: 0.5 on validation (``agent.threshold``), a REFUTES count
for ``nli`` (``baselines.nli_threshold``), a value given on the command line, or — as the paper
does on test — the threshold that maximised F1 on a validation run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claire.config import AgentConfig, BaselineConfig
from claire.errors import ConfigError
from claire.evals.predictions import load_predictions, read_run_config
from claire.tasks.records import COUNTING_SYSTEMS
from claire.tasks.wikicollide.scoring import best_f1_threshold


def default_threshold(system: str, config_public: dict[str, Any] | None) -> float:
    """The validation threshold of a system: ``baselines.nli_threshold`` (a REFUTES count) for
    nli, ``agent.threshold`` otherwise, read from a run's public config when given."""
    if system in COUNTING_SYSTEMS:
        value = ((config_public or {}).get("baselines") or {}).get("nli_threshold")
        return float(BaselineConfig().nli_threshold if value is None else value)
    value = ((config_public or {}).get("agent") or {}).get("threshold")
    return float(AgentConfig().threshold if value is None else value)


def resolve_threshold(
    system: str,
    *,
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
        value = best_f1_threshold(load_predictions(threshold_from), system)
        return value, f"best F1 on {threshold_from}"
    if system in COUNTING_SYSTEMS:
        return default_threshold(system, config_public), "a count of REFUTES passages, baselines.nli_threshold"
    return default_threshold(system, config_public), "the validation default, agent.threshold"
