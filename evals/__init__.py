"""Evaluation: the WikiCollide loader, the resumable batch runner and its run directories,
metrics and reports, ablation sweeps, benchmarks, and the mock OpenAI server they test against.

May import ``agent``, ``tools``, ``indexes``, ``config`` and ``errors``; never ``cli``.
"""
