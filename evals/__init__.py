"""Evaluation: the resumable batch runner over the executor (``runner``; its run directory's
predictions log and the executor itself live in :mod:`claire.runs`), choosing the scoring threshold
(``thresholds``), reading runs back and comparing them (``reporting``), and ablation sweeps
(``sweep``). What a run's lines hold and how it is scored is the task's business (``claire.tasks``).

May import ``runs``, ``agent``, ``tasks``, ``tools``, ``llm``, ``indexes``, ``config``, ``files`` and
``errors``; never ``jobs``, ``livewiki``, ``studies``, ``web`` or ``cli``.
"""
