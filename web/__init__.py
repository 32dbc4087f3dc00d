"""The editor-facing web app (``claire serve``): HTTP routes over the same configuration, jobs,
job store and patrol as the CLI (all in :mod:`claire.workflows`), a static page (no build step)
and a Manifest V3 browser extension for Wikipedia pages.

May import ``workflows``, ``agent``, ``indexes`` and ``config``; nothing but ``cli`` and
``bench`` imports it.
"""
