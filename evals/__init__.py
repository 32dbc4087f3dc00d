"""Evaluation: the WikiCollide and FEVEROUS loaders (``dataset``, ``feverous``), FEVEROUS scoring
(``feverous_metrics``), the resumable batch runner and its run directories,
metrics and reports, and ablation sweeps.

May import ``agent``, ``tools``, ``indexes``, ``config`` and ``errors``; never ``cli``.
"""
