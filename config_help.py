"""What each configuration setting means, for ``claire config show``. A field's own pydantic
``description`` wins; this table covers the fields declared without one, so adding a setting
never needs an edit here (it shows with an empty description until it gets one)."""

from __future__ import annotations

from claire.config import Config

HELP: dict[str, str] = {
    "llm.provider": "openai (any OpenAI-compatible endpoint), azure, or local (a GGUF file in-process); a provider prefix in llm.model wins",
    "llm.model": "model name; provider-qualified (anthropic:..., ollama:...) for LangChain's other providers",
    "llm.base_url": "OpenAI-compatible endpoint (vLLM, llama.cpp server, LM Studio, Ollama /v1); also OPENAI_BASE_URL",
    "llm.api_key": "the key itself (prefer an environment variable)",
    "llm.api_key_env": "environment variable holding the key",
    "llm.azure_api_version": "Azure OpenAI API version",
    "llm.local_model_path": "the .gguf file for the local provider",
    "llm.local_n_ctx": "context window of the local model (tokens)",
    "llm.temperature": "sampling temperature",
    "llm.max_tokens": "longest answer per call (tokens); the context budget keeps room for it",
    "llm.timeout": "seconds to wait for one answer",
    "llm.max_attempts": "tries per call on 429, 5xx, timeouts, connection errors and garbled answers",
    "llm.retry_base_wait": "first backoff between tries (seconds), growing exponentially with jitter",
    "llm.retry_max_wait": "longest backoff between tries (seconds); a server's Retry-After is honoured up to 120 s",
    "llm.stream": "receive answers as a stream of chunks",
    "llm.max_concurrency": "LLM calls in flight at once, shared by everything one command runs",
    "llm.tool_calling": "native (the endpoint's tool calls) or text (name(argument) in the answer)",
    "llm.cache": "keep answers in the SQLite response cache",
    "llm.refresh_cache": "ignore cached answers and store fresh ones",
    "llm.cache_path": "the response cache file (default: llm-cache.sqlite in the cache directory)",
    "retrieval.backend": "qdrant (an index) or wikichat (the WikiChat search API)",
    "retrieval.index": "index name",
    "retrieval.path": "folder holding embedded indexes (default: indexes in the user data directory)",
    "retrieval.url": "Qdrant server URL instead of the embedded engine",
    "retrieval.qdrant_api_key": "API key of the Qdrant server",
    "retrieval.embedder": "query embedder; unset: the one the index was built with",
    "retrieval.mode": "hybrid (dense + BM25), dense or bm25",
    "retrieval.candidates": "passages retrieved before reranking",
    "retrieval.rerank": "rerank search results with the LLM (RankGPT sliding window)",
    "retrieval.rerank_window": "passages the reranker sees at once",
    "retrieval.rerank_step": "how far the reranking window slides",
    "retrieval.rerank_max_chars": "characters of each passage shown to the reranker",
    "retrieval.wikichat_url": "the WikiChat search endpoint",
    "agent.system": "claire (the agent), rav (retrieve and verify) or nli (the NLI pipeline)",
    "agent.max_steps": "research steps per claim",
    "agent.docs_per_query": "passages per search",
    "agent.clarify_k": "passages clarify_entity reads",
    "agent.tools": "enabled tools (search and report_inconsistency are always on)",
    "agent.stop_on_report": "end the research at the first reported inconsistency",
    "agent.threshold": "inconsistency score from which the verdict is inconsistent",
    "agent.report": "write the two-sided report; unset: on for claire check, off in batch runs",
    "agent.review": "pause for a person to review reported inconsistencies",
    "baselines.k": "passages the baselines retrieve",
    "baselines.nli_threshold": "REFUTES passages from which nli says inconsistent",
    "prompts.set": "default, or a folder of *.j2 files overriding templates by name",
    "prompts.variants": "template name -> variant name (verifier = \"strict\" renders verifier.strict.j2)",
    "eval.concurrency": "claims evaluated at once",
}


def describe(section: str, name: str) -> str:
    """The description of setting ``section.name`` ("" when it has none)."""
    fields = Config.model_fields[section].annotation.model_fields  # type: ignore[union-attr]
    field = fields.get(name)
    return (field.description if field is not None and field.description else None) or HELP.get(f"{section}.{name}", "")
