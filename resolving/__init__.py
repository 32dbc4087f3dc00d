"""Resolving: which side of a contradiction is right, from a flagged check to a worklist entry.

- ``cases`` — a contradiction to resolve, built from what the research itself found: the model
  names the conflicting passage and what each side states (``prompts/conflict.j2``); word overlap
  only when it names nothing, and the case says so;
- ``resolver`` — each side's cited sources read (``sources.reading``), rated (``sources.reliability``)
  and judged by the citation verifier, independent agreement, recency, and the documented rule
  that decides;
- ``talk_page`` (with ``talk_page.wiki.j2``) — the talk-page draft of a decision, never posted;
- ``flags`` — the one entry point every surface calls: flagged checks in, one decision per
  distinct contradiction out;
- ``worklist`` — a corpus run's flags folded into one entry per contradiction, ranked, written as
  JSONL and as a wikitable, and scored against a key of planted contradictions.

May import ``agent``, ``runs``, ``sources``, ``tasks``, ``llm``, ``indexes``, ``prompts``,
``domain``, ``config`` and ``errors``; imported by ``jobs``, ``web``, ``evals`` and ``cli``.
"""
