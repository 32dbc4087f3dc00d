"""The systems: the CLAIRE LangGraph agent and the paper's two baselines, behind one interface.

- ``system``: the System interface and its answer, the Assessment;
- ``state``: the research graph's state and run context; ``graph``: the graph, compiled once;
  ``controller`` (with ``actions``, reading the model's chosen action) and ``verifier`` (the
  verdict and the two-sided report) are its deciding nodes; ``claire_agent``: the CLAIRE system
  that runs the graph for one claim;
- ``baselines``: retrieve-and-verify and the NLI pipeline;
- ``runtime``: assembling a system from the configuration (``open_system``);
- ``extraction``: splitting a passage into atomic facts.

May import ``tools``, ``tasks``, ``llm``, ``indexes``, ``prompts``, ``config`` and ``errors``;
never ``runs``, ``evals``, ``jobs``, ``livewiki``, ``studies``, ``web`` or ``cli``.
"""
