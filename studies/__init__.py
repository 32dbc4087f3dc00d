"""Corpus studies: estimating a corpus's inconsistency rate from a sample (``estimate``, its
statistics in ``rate_statistics``), auditing a benchmark's claims (``audit``, with AmbigQA's
questions turned into statements in ``ambigqa``), the run files and report both share
(``rate_runs``), and people's reviews of what a study flagged (``reviews``).

May import ``evals``, ``runs``, ``agent``, ``tasks``, ``llm``, ``indexes``, ``config``, ``domain``,
``files`` and ``errors``; never ``jobs``, ``livewiki``, ``web`` or ``cli``.
"""
