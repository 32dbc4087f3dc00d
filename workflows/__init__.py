"""What users run end to end, built on the systems and run directories: scanning a whole passage
(``scan``, with ``spans`` locating each fact in its text), estimating a corpus's inconsistency
rate (``estimate``, its statistics in ``rate_statistics``), auditing a benchmark (``audit``), the
run files and report both share (``rate_runs``), people's reviews (``reviews``); checks and scans
kept as jobs in a SQLite store (``jobs``, ``job_store``), and the patrol of a live wiki's edits
(``patrol``, over ``recentchanges``, ``mediawiki`` and ``edit_diff``).

May import ``evals``, ``agent``, ``tools``, ``ingestion``, ``indexes``, ``config`` and ``errors``; never
``web`` or ``cli``.
"""
