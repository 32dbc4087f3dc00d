"""The agent's tools and the reranker: search, clarify_entity, explain, report_inconsistency,
RankGPT listwise reranking, and the tool descriptions the controller is shown.

Tools receive their LLM client and prompt library as arguments (anything with an async
``chat(messages)``), so this package imports only ``indexes``, ``prompts``, ``config`` and
``errors`` — never ``agent``, ``evals`` or ``cli``.
"""
