"""The ``claire bench ...`` commands: LLM-layer overhead and concurrency (``llm``), batch
evaluation throughput (``eval``), and retrieval speed and quality (``retrieval``).

May import ``evals``, ``agent``, ``tools``, ``indexes``, ``testing``, ``config`` and ``errors``;
never ``cli``.
"""
