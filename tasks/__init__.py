"""Tasks: what a run asks the systems and how their answers are judged and scored. One
:class:`~claire.tasks.base.Task` strategy per task (``wikicollide``, ``feverous``, ``citations``),
found by name in ``registry``: the prompt variants it renders, how it reads its data files, how a
verifier's answer is judged, how NLI answers combine, and how a run is scored and reported.
``records`` holds what every task is made of (Claim, TraceItem, Prediction) and ``fact_limits``
how long one fact may be.

May import ``llm``, ``prompts``, ``indexes``, ``config``, ``files`` and ``errors``; never
``tools``, ``agent``, ``evals`` or ``cli``.
"""
