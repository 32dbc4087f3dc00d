"""Assembling a runnable system from the resolved configuration: the LLM client, the prompt
library, the retriever and search tool, and the chosen system (claire, rav or nli).

``open_system(config)`` is an async context manager that yields a System and closes what it
opened; evaluation, sweeps and the CLI all go through it.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from claire.agent.baselines import NLIPipeline, RetrieveAndVerify
from claire.agent.claire_agent import ClaireAgent, Reviewer, StepListener
from claire.agent.llm import LLMClient
from claire.agent.system import SYSTEM_NAMES, System
from claire.agent.tasks import task_prompt_variants
from claire.config import Config
from claire.errors import ConfigError
from claire.indexes.registry import Searcher, open_searcher
from claire.prompts import PromptLibrary, library
from claire.tools.rankgpt import RankGPTReranker
from claire.tools.search import SearchTool

def prompt_library(config: Config) -> PromptLibrary:
    return library(config.prompts.set, {**task_prompt_variants(config.agent.task), **config.prompts.variants},
                   config.prompts.max_value_chars)


def open_retrieval(config: Config) -> Searcher:
    """The configured retriever: the WikiChat API, or a Qdrant index (the demo one is built on first use)."""
    retrieval = config.retrieval
    return open_searcher(
        retrieval.backend,
        index=retrieval.index,
        root=retrieval.index_root(),
        url=retrieval.url,
        api_key=retrieval.qdrant_api_key.get_secret_value() if retrieval.qdrant_api_key else None,
        embedder=retrieval.embedder,
        wikichat_url=retrieval.wikichat_url,
        query_runtime=retrieval.query_runtime,
    )


def search_tool(config: Config, retriever: Searcher, llm: LLMClient, prompts: PromptLibrary) -> SearchTool:
    retrieval = config.retrieval
    reranker = (
        RankGPTReranker(llm, prompts, window=retrieval.rerank_window, step=retrieval.rerank_step, max_chars=retrieval.rerank_max_chars)
        if retrieval.rerank
        else None
    )
    return SearchTool(retriever, reranker=reranker, mode=retrieval.mode, candidates=retrieval.candidates)


def build_system(
    config: Config,
    *,
    llm: LLMClient,
    retriever: Searcher,
    name: str | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
) -> System:
    name = name or config.agent.system
    prompts = prompt_library(config)
    search = search_tool(config, retriever, llm, prompts)
    if name == "claire":
        return ClaireAgent(config=config, llm=llm, search=search, prompts=prompts, reviewer=reviewer, on_step=on_step)
    if name == "rav":
        return RetrieveAndVerify(config=config, llm=llm, search=search, prompts=prompts, on_step=on_step)
    if name == "nli":
        return NLIPipeline(config=config, llm=llm, search=search, prompts=prompts, on_step=on_step)
    raise ConfigError(f"unknown system '{name}'; allowed: {', '.join(SYSTEM_NAMES)}")


@asynccontextmanager
async def open_system(
    config: Config,
    *,
    name: str | None = None,
    llm: LLMClient | None = None,
    retriever: Searcher | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
) -> AsyncIterator[System]:
    """Yield a ready System; close the LLM client and retriever this call opened."""
    own_llm = llm is None
    llm = llm or LLMClient.from_config(config.llm)
    own_retriever = retriever is None
    try:
        retriever = retriever or open_retrieval(config)
        try:
            yield build_system(config, llm=llm, retriever=retriever, name=name, reviewer=reviewer, on_step=on_step)
        finally:
            if own_retriever and hasattr(retriever, "close"):
                retriever.close()
    finally:
        if own_llm:
            await llm.aclose()
