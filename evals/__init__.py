"""Evaluation: the resumable batch runner and its run directories (``runner``, ``predictions``),
choosing the scoring threshold (``thresholds``), reading runs back and comparing them
(``reporting``), and ablation sweeps (``sweep``). What a run's lines hold and how it is scored
is the task's business (``claire.tasks``).

May import ``agent``, ``tasks``, ``tools``, ``llm``, ``indexes``, ``config``, ``files`` and
``errors``; never ``workflows``, ``web`` or ``cli``.
"""
