"""The editor-facing web app (``claire serve``): a FastAPI server over the same configuration,
LLM layer and systems as the CLI, a static page (no build step) and a Manifest V3 browser
extension for Wikipedia pages.

May import ``workflows``, ``agent``, ``indexes`` and ``config``; nothing but ``cli`` and
``bench`` imports it.
"""
