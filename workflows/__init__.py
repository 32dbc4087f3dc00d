"""Jobs built on the systems and run directories: scanning a whole passage (``scan``),
estimating a corpus's inconsistency rate (``estimate``), auditing a benchmark (``audit``), and
the rate report both share (``rates``).

May import ``evals``, ``agent``, ``tools``, ``indexes``, ``config`` and ``errors``; never ``cli``.
"""
