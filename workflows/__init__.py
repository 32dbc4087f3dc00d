"""Jobs for editors built on the systems and run directories: scanning a whole passage
(``scan``).

May import ``evals``, ``agent``, ``tools``, ``indexes``, ``config`` and ``errors``; never ``cli``.
"""
