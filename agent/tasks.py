"""Tasks: what a run asks the systems to answer. ``agent.task`` selects the prompt variants a task
renders (and with them the result shape); the systems, retriever and LLM layer stay shared.

- ``wikicollide`` (default): an inconsistency score in [0, 1] and a verdict.
- ``feverous``: FEVEROUS's three-way label and cited evidence element ids
  (:mod:`claire.agent.feverous_task`).
"""

from __future__ import annotations

# template name -> variant, per task; a user's own prompts.variants entries take precedence
TASK_PROMPT_VARIANTS: dict[str, dict[str, str]] = {
    "wikicollide": {},
    "feverous": {"controller": "feverous", "verifier": "feverous", "nli": "feverous"},
}


def task_prompt_variants(task: str) -> dict[str, str]:
    return dict(TASK_PROMPT_VARIANTS.get(task, {}))
