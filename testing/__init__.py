"""Test doubles shipped for CLAIRE's tests and users' own: an OpenAI-compatible HTTP server
(``mock_openai``), a scripted chat backend and ``scripted_client`` (``scripted``), scripted
models and a keyword retriever (``doubles``), and a local server that answers like the WikiChat
search API (``wikichat_mock``).

May import ``agent``, ``tools``, ``indexes``, ``config`` and ``errors``; nothing imports it but
tests and benchmarks.
"""
