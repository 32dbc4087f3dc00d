"""The agent's tools: LangChain ``@tool`` functions whose docstrings are their descriptions and
whose signatures are their schemas — ``search``, ``clarify_entity``, ``explain``,
``report_inconsistency`` and ``finish`` (one module each, all listed in ``registry``). The search engine
behind them is :mod:`claire.indexes.search_engine`.

A tool reads its services and settings from the LangGraph run context (``context.ToolContext``)
and the research so far from the graph state (the claim, the evidence gathered), and returns a
state update (``results.step_result``). May import ``tasks``, ``llm``, ``prompts``, ``indexes``,
``config`` and ``errors`` — never ``agent``, ``evals`` or ``cli``.
"""
