"""Assembling a runnable system from the resolved configuration: the LLM client, the prompt
library (with the task's prompt variants), the retriever and search engine, and the chosen
system — claire, rav, nli, the cascade of a baseline and claire, or cite (the citation checker,
which answers the citations task over its sources index).

``open_system(config)`` is an async context manager that yields a System and closes what it
opened; evaluation, sweeps, the web app and the CLI all go through it.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from claire.agent.claire_agent import Reviewer
from claire.agent.registry import needs_llm, system_class
from claire.agent.system import CalibratedSystem, StepListener, System, SystemParts
from claire.config import PRESETS, Config
from claire.settings import RetrievalConfig
from claire.errors import ClaireError, ConfigError
from claire.indexes.catalog import list_indexes
from claire.indexes.registry import DEMO, Searcher, open_searcher
from claire.indexes.retriever import MULTILINGUAL_DEMO
from claire.llm.client import ChatClient, NoLLM
from claire.prompts import PromptLibrary, library
from claire.tasks.base import Task
from claire.tasks.calibration import load_calibration
from claire.tasks.registry import get_task
from claire.indexes.rankgpt import RankGPTReranker
from claire.indexes.search_engine import SearchEngine
from claire.ingestion.web_docs import EXAMPLE_INDEX, ensure_example_sources_index


def prompt_library(config: Config) -> PromptLibrary:
    """The prompt templates of a configuration: its set, the task's variants, then the user's. A
    variant that only the preset chose (the practical preset's controller or verifier) yields to
    the task's own variant of that template: FEVEROUS asks for labels, not for a score."""
    task_variants = get_task(config.agent.task).prompt_variants
    preset_variants = PRESETS[config.preset].get("prompts", {}).get("variants", {})
    chosen = {name: variant for name, variant in config.prompts.variants.items()
              if not (name in task_variants and preset_variants.get(name) == variant)}
    return library(config.prompts.set, {**task_variants, **chosen}, config.prompts.max_value_chars,
                   structured=config.llm.structured == "auto")


def run_settings(config: Config) -> dict:
    """What a run directory records of its configuration: the resolved settings (secrets masked)
    and, for an embedded index, the embedder the index was built with (the one setting the paper's
    method cannot follow offline: it embeds with mGTE). The settings are validated again here, with
    the registries loaded, so a configuration resolved before them is recorded the same way."""
    settings = config.with_overrides({}).public_dict()
    retrieval = config.retrieval
    if retrieval.backend == "qdrant" and retrieval.url is None:
        try:
            metas = list_indexes(retrieval.index_root())
        except ClaireError:
            metas = []
        opened = demo_for(retrieval)  # the multilingual demo, when the English one is checked across editions
        meta = next((m for m in metas if m.name == opened), None)
        settings["index_embedder"] = meta.embedder_model if meta is not None else None
    return settings


def open_retrieval(config: Config) -> Searcher:
    """The configured retriever: the WikiChat API, or a Qdrant index (the demo one is built on first
    use) — the index the task searches (``retrieval.index``, or for citations the sources index
    ``cite.index``, whose bundled examples are indexed on first use)."""
    retrieval = config.retrieval
    if get_task(config.agent.task).index_setting == "cite.index":
        name = config.cite.index
        if not name.strip():
            raise ConfigError("cite.index is empty: name the sources index (build one with `claire index build --from-web-docs`)")
        if name == EXAMPLE_INDEX and retrieval.url is None:
            ensure_example_sources_index(retrieval.index_root(), retrieval.embedder or "minilm")
        backend, index = "qdrant", name
    else:
        backend, index = retrieval.backend, demo_for(retrieval)
    return open_searcher(
        backend,
        index=index,
        root=retrieval.index_root(),
        url=retrieval.url,
        api_key=retrieval.qdrant_api_key.get_secret_value() if retrieval.qdrant_api_key else None,
        embedder=retrieval.embedder,
        wikichat_url=retrieval.wikichat_url,
        query_runtime=retrieval.query_runtime,
    )


def demo_for(retrieval: RetrievalConfig) -> str:
    """The index to open: ``retrieval.index``, except that the English demo checked across languages
    (``retrieval.languages``) is the multilingual demo, which holds the other editions too."""
    if retrieval.index == DEMO and retrieval.languages and retrieval.url is None:
        return MULTILINGUAL_DEMO
    return retrieval.index


def search_engine(config: Config, retriever: Searcher, llm: ChatClient | None, prompts: PromptLibrary) -> SearchEngine:
    """The search engine over ``retriever``, reranking with RankGPT when ``retrieval.rerank`` is on."""
    retrieval = config.retrieval
    reranker = None
    if retrieval.rerank:
        if llm is None:
            raise ConfigError("RankGPT reranking needs an LLM")
        reranker = RankGPTReranker(llm, prompts, window=retrieval.rerank_window, step=retrieval.rerank_step,
                                   max_chars=retrieval.rerank_max_chars)
    held = list(getattr(getattr(getattr(retriever, "store", None), "meta", None), "languages", None) or [])
    searched = {retrieval.language, *retrieval.languages}
    if held and not searched & set(held):
        def editions(codes: list[str]) -> str:
            return " and ".join(codes) + (" edition" if len(codes) == 1 else " editions")

        raise ConfigError(f"index {retrieval.index} holds the {editions(held)} only, and searches keep to the "
                          f"{editions(sorted(searched))}: give the facts' edition with --language {held[0]} "
                          "(retrieval.language), or search more editions with --languages")
    return SearchEngine(retriever, reranker=reranker, mode=retrieval.mode, candidates=retrieval.candidates,
                        language=retrieval.language, editions=retrieval.languages)


def build_system(
    config: Config,
    *,
    llm: ChatClient,
    retriever: Searcher,
    name: str | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
) -> System:
    """The system ``name`` (default ``agent.system``: a registered name, or ``package.module:Class``
    for a system written outside CLAIRE) over an open LLM client and retriever, made by its class's
    ``from_config``."""
    name = name or config.agent.system
    system = system_class(name)
    task = get_task(config.agent.task)
    check_pairing(name, task)
    prompts = prompt_library(config)

    def build(other: str, *, reviewer: Reviewer | None = None) -> System:
        return build_system(config, llm=llm, retriever=retriever, name=other, reviewer=reviewer, on_step=on_step)

    searching = config if needs_llm(name) else config.with_overrides({"retrieval.rerank": False})  # reranking asks the LLM
    parts = SystemParts(config=config, llm=llm, retriever=retriever, prompts=prompts, task=task, reviewer=reviewer,
                        on_step=on_step, build=build, make_search=lambda: search_engine(searching, retriever, llm, prompts))
    if system.__module__.startswith("claire."):
        return system.from_config(parts)
    try:  # a system written outside CLAIRE: what goes wrong in it is said as its own
        built = system.from_config(parts)
    except ClaireError:
        raise
    except SystemExit as error:
        raise ConfigError(f"system '{name}': from_config called sys.exit({error.code!r})") from None
    except Exception as error:  # noqa: BLE001
        first = (str(error).strip().splitlines() or [""])[0]
        raise ConfigError(f"system '{name}': from_config failed: {type(error).__name__}: {first}"[:500]) from None
    if not callable(getattr(built, "assess", None)):
        raise ConfigError(f"system '{name}': from_config returned {type(built).__name__}, not a system with an "
                          "assess method")
    return built


def check_pairing(name: str, task: Task) -> None:
    """Refuse a system that does not answer the task (a ConfigError saying which does)."""
    answers = getattr(system_class(name), "answers_task", None)
    if task.system is not None and name != task.system:
        raise ConfigError(f"the {task.name} task is answered by the {task.system} system, not {name} "
                          f"(set agent.system = \"{task.system}\")")
    if answers is not None and answers != task.name:
        raise ConfigError(f"the {name} system answers the {answers} task, not {task.name} "
                          f"(set agent.task = \"{answers}\")")


def ready_system(config: Config, *, llm: ChatClient, retriever: Searcher, name: str | None = None,
                 reviewer: Reviewer | None = None, on_step: StepListener | None = None) -> System:
    """The system ``name`` over an open LLM client and retriever, answering with calibrated
    probabilities when ``agent.calibration`` is set (the caller closes the client and retriever)."""
    system = build_system(config, llm=llm, retriever=retriever, name=name, reviewer=reviewer, on_step=on_step)
    if config.agent.calibration is not None:
        system = CalibratedSystem(system, load_calibration(config.agent.calibration))
    return system


@asynccontextmanager
async def open_system(
    config: Config,
    *,
    name: str | None = None,
    llm: ChatClient | None = None,
    retriever: Searcher | None = None,
    reviewer: Reviewer | None = None,
    on_step: StepListener | None = None,
) -> AsyncIterator[System]:
    """Yield a ready System (``name``, else ``agent.system``) and close the LLM client and
    retriever this call opened."""
    own_llm = llm is None
    llm = llm or (ChatClient.from_config(config.llm) if needs_llm(name or config.agent.system) else NoLLM(name or config.agent.system))
    own_retriever = retriever is None
    try:
        retriever = retriever or open_retrieval(config)
        try:
            yield ready_system(config, llm=llm, retriever=retriever, name=name, reviewer=reviewer, on_step=on_step)
        finally:
            if own_retriever and hasattr(retriever, "close"):
                retriever.close()
    finally:
        if own_llm:
            await llm.aclose()
