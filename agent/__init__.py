"""The systems and what they share: the CLAIRE LangGraph agent (``claire_agent``), the two
baselines (``baselines``), the verifier and two-sided report (``verifier``), the System interface
and its data (``system``), assembling a system from config (``runtime``), the LLM client layer
(``llm``, ``chat_models`` for LangChain chat models, ``llm_backends``, ``llm_cache``, ``usage``),
token counting and context windows (``tokens``), fitting prompts into them (``budget``), action
parsing (``actions``), fact extraction (``extraction``), tasks and their prompt variants
(``tasks``) and the FEVEROUS task's parsing and evidence limits (``feverous_task``).

May import ``tools``, ``indexes``, ``prompts``, ``config`` and ``errors``; never ``evals`` or ``cli``.
"""
