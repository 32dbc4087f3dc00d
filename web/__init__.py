"""The editor-facing web app (``claire serve``): HTTP routes over the same configuration, jobs,
job store and patrol as the CLI (:mod:`claire.jobs`, :mod:`claire.livewiki`), a static page (no build step)
and a Manifest V3 browser extension for Wikipedia pages.

May import ``jobs``, ``livewiki``, ``studies``, ``evals``, ``runs``, ``agent``, ``indexes`` and ``config``; nothing but ``cli`` and
``bench`` imports it.
"""
