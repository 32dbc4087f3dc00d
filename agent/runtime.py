"""Assembling a runnable system from the resolved configuration: the LLM client, the prompt
library (with the task's prompt variants), the retriever and search engine, and the chosen
system (claire, rav, nli or the cascade of a baseline and claire) — or, for a task that brings its
own system (citations), that one.

``open_system(config)`` is an async context manager that yields a System and closes what it
opened; evaluation, sweeps, the web app and the CLI all go through it.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from claire.agent.baselines import BaselineParts, NLIPipeline, RetrieveAndVerify
from claire.agent.cascade import Cascade
from claire.agent.claire_agent import ClaireAgent, Reviewer
from claire.agent.state import ResearchContext
from claire.agent.system import SYSTEM_NAMES, CalibratedSystem, StepListener, System
from claire.config import Config
from claire.errors import ClaireError, ConfigError
from claire.indexes.catalog import list_indexes
from claire.indexes.registry import Searcher, open_searcher
from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary, library
from claire.tasks.base import Task
from claire.tasks.calibration import load_calibration
from claire.tasks.registry import get_task
from claire.indexes.rankgpt import RankGPTReranker
from claire.tools.registry import tools_for
from claire.indexes.search_engine import SearchEngine


def prompt_library(config: Config) -> PromptLibrary:
    """The prompt templates of a configuration: its set, the task's variants, then the user's."""
    variants = {**get_task(config.agent.task).prompt_variants, **config.prompts.variants}
    return library(config.prompts.set, variants, config.prompts.max_value_chars)


def run_settings(config: Config) -> dict:
    """What a run directory records of its configuration: the resolved settings (secrets masked)
    and, for an embedded index, the embedder the index was built with (the one setting the paper's
    method cannot follow offline: it embeds with mGTE)."""
    settings = config.public_dict()
    retrieval = config.retrieval
    if retrieval.backend == "qdrant" and retrieval.url is None:
        try:
            metas = list_indexes(retrieval.index_root())
        except ClaireError:
            metas = []
        meta = next((m for m in metas if m.name == retrieval.index), None)
        settings["index_embedder"] = meta.embedder_model if meta is not None else None
    return settings


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


def search_engine(config: Config, retriever: Searcher, llm: ChatClient | None, prompts: PromptLibrary) -> SearchEngine:
    """The search engine over ``retriever``, reranking with RankGPT when ``retrieval.rerank`` is on."""
    retrieval = config.retrieval
    reranker = None
    if retrieval.rerank:
        if llm is None:
            raise ConfigError("RankGPT reranking needs an LLM")
        reranker = RankGPTReranker(llm, prompts, window=retrieval.rerank_window, step=retrieval.rerank_step,
                                   max_chars=retrieval.rerank_max_chars)
    return SearchEngine(retriever, reranker=reranker, mode=retrieval.mode, candidates=retrieval.candidates)


def build_system(
    config: Config,
    *,
    llm: ChatClient,
    retriever: Searcher,
    name: str | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
) -> System:
    """The system ``name`` (default ``agent.system``) over an open LLM client and retriever."""
    name = name or config.agent.system
    prompts = prompt_library(config)
    search = search_engine(config, retriever, llm, prompts)
    task = get_task(config.agent.task)
    agent = config.agent
    if name == "claire":
        reviewer = reviewer if agent.review else None
        context = ResearchContext(
            llm=llm, search=search, prompts=prompts, docs_per_query=agent.docs_per_query, clarify_k=agent.clarify_k,
            stop_on_report=agent.stop_on_report, review=reviewer is not None, task=task, snippet_chars=agent.snippet_chars,
            tools=tuple(tools_for(agent.tools, finish=agent.finish_action)), max_steps=agent.max_steps,
            keep_observations=agent.keep_observations,
            report=bool(agent.report), threshold=agent.threshold,
        )
        return ClaireAgent(context=context, threshold=agent.threshold, reviewer=reviewer, on_step=on_step,
                           checkpoints=agent.checkpoints)
    if name == "cascade":
        first = build_system(config, llm=llm, retriever=retriever, name=agent.cascade_first, on_step=on_step)
        full = build_system(config, llm=llm, retriever=retriever, name="claire", reviewer=reviewer, on_step=on_step)
        return Cascade(first, full, cut=agent.cascade_cut, threshold=agent.threshold)
    if name in ("rav", "nli"):
        threshold = agent.threshold if name == "rav" else float(config.baselines.nli_threshold)
        parts = BaselineParts(llm=llm, search=search, prompts=prompts, task=task, k=config.baselines.k, threshold=threshold)
        return RetrieveAndVerify(parts, on_step=on_step) if name == "rav" else NLIPipeline(parts, on_step=on_step)
    raise ConfigError(f"unknown system '{name}'; allowed: {', '.join(SYSTEM_NAMES)}")


@asynccontextmanager
async def open_system(
    config: Config,
    *,
    name: str | None = None,
    llm: ChatClient | None = None,
    retriever: Searcher | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
    task: Task | None = None,
) -> AsyncIterator[System]:
    """Yield a ready System — ``task``'s own (citations), else the configured one of claire, rav
    and nli — and close the LLM client and retriever this call opened."""
    own = (task or get_task(config.agent.task)).open_system(config)
    if own is not None:
        async with own as system:
            yield system
        return
    own_llm = llm is None
    llm = llm or ChatClient.from_config(config.llm)
    own_retriever = retriever is None
    try:
        retriever = retriever or open_retrieval(config)
        try:
            system = build_system(config, llm=llm, retriever=retriever, name=name, reviewer=reviewer, on_step=on_step)
            if config.agent.calibration is not None:
                system = CalibratedSystem(system, load_calibration(config.agent.calibration))
            yield system
        finally:
            if own_retriever and hasattr(retriever, "close"):
                retriever.close()
    finally:
        if own_llm:
            await llm.aclose()
