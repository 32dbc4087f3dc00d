"""CLAIRE: corpus-level inconsistency detection for Wikipedia.

Packages: ``agent`` (systems, LLM layer), ``prompts`` (Jinja templates), ``tools`` (the agent's
tools and the reranker), ``indexes`` (corpora, embedders, vector stores), ``evals`` (WikiCollide
evaluation, sweeps, benchmarks). ``cli`` is the ``claire`` command. Dependencies point one way:
cli -> evals -> agent -> tools -> indexes; ``config`` is a leaf every layer may read.
"""

__version__ = "0.1.0"
