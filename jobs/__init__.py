"""Checks and scans kept as jobs: extracting a passage's facts and locating each in its text
(``scan``, ``spans``), running checks and scans in the background on the executor (``runner``), and
the SQLite store that keeps jobs, facts, their outcomes, events and reviews across restarts
(``store``). The web app and the patrol build on it.

May import ``evals``, ``runs``, ``agent``, ``tasks``, ``llm``, ``indexes``, ``config``, ``domain``,
``files`` and ``errors``; never ``livewiki``, ``studies``, ``web`` or ``cli``.
"""
