"""The agent's tools: LangChain ``@tool`` functions whose docstrings are their descriptions and
whose signatures are their schemas — ``search``, ``clarify_entity``, ``explain``,
``report_inconsistency`` and ``finish`` (one module each, all listed in ``registry``) — with the
search engine behind them (``search_engine``: retrieval plus ``rankgpt`` reranking).

A tool reads its services and settings from the LangGraph run context (``context.ToolContext``)
and the research so far from the graph state (the claim, the evidence gathered), and returns a
state update (``results.step_result``). May import ``tasks``, ``llm``, ``prompts``, ``indexes``,
``config`` and ``errors`` — never ``agent``, ``evals`` or ``cli``.
"""
