"""Checking on a Ray cluster: the corpus run's work (extracting a block's facts, checking a fact)
done by a pool of Ray actors instead of this process (``claire worklist --engine ray``).

Each actor (:class:`Worker`) opens the configured system once — its LLM client and its index
handle, a local Qdrant path on one machine or a Qdrant server when the workers span machines —
and keeps them for every unit it is given. The driver keeps everything else as it is: the same
executor hands it claims (:class:`RayChecker` is a System whose ``assess`` runs on an actor), the
same run directory keeps each result as it arrives (so a rerun skips what is done), the same
budget counts each check's usage (an actor's usage comes back with its answer and is added to
the driver's scopes). An actor whose process dies is restarted by Ray and its unfinished calls
are run again (``max_restarts``, ``max_task_retries``); the LLM response cache, shared on one
machine, keeps a repeated call from costing twice. Ray is an extra: ``pip install -e ".[ray]"``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from claire.config import Config
from claire.errors import ClaireError, ConfigError
from claire.usage import Usage, record_usage, track_usage

def units_per_worker(config: Config) -> int:
    """Units one actor works on at once: its share of ``eval.concurrency`` (its LLM calls wait on the
    network, not on its CPU), so the pool has as many in flight as the local engine would."""
    return max(1, -(-config.eval.concurrency // config.eval.ray_workers))


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("the Ray engine needs Ray: pip install -e \".[ray]\" (or pip install 'ray>=2.40')") from None
    return ray


class Worker:
    """One Ray actor: the configured system opened once, then any number of units."""

    def __init__(self, config: Config):
        from claire.agent.runtime import open_retrieval, prompt_library, ready_system
        from claire.llm.client import ChatClient

        self.config = config
        self.llm = ChatClient.from_config(config.llm)
        self.prompts = prompt_library(config)
        self.system = ready_system(config, llm=self.llm, retriever=open_retrieval(config))

    def pid(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()

    async def assess(self, claim: Any) -> dict[str, Any]:
        """Check one claim: its answer (or why it failed) and the usage it took."""
        with track_usage() as usage:
            try:
                answer, error = await self.system.assess(claim), None
            except ClaireError as failure:
                answer, error = None, str(failure)
        return {"answer": answer, "error": error, "usage": usage.to_dict()}

    async def extract(self, block: Any) -> dict[str, Any]:
        """Extract one block's facts (the corpus run's extraction record) and the usage it took."""
        from claire.agent.extraction import block_facts

        with track_usage() as usage:
            record = await block_facts(block, llm=self.llm, prompts=self.prompts,
                                       max_fact_chars=self.config.agent.max_fact_chars)
        return {"record": record, "usage": usage.to_dict()}


class RayChecker:
    """A System whose checks run on a pool of Ray actors, each holding the configured system (it
    answers under that system's name and score kind)."""

    def __init__(self, actors: list[Any], system_class: Any):
        self.actors = actors
        self.name: str = getattr(system_class, "name", "claire")
        self.score_kind = getattr(system_class, "score_kind", "probability")
        self._turns = itertools.cycle(range(len(actors)))
        self.start_s: float | None = None  # seconds from connecting to Ray until every actor had opened its system

    async def _call(self, method: str, unit: Any) -> dict[str, Any]:
        actor = self.actors[next(self._turns)]
        ray = _ray()
        try:
            answer = await getattr(actor, method).remote(unit)
        except ray.exceptions.RayError as error:  # the actor gave up, or its process could not be restarted
            raise ClaireError(f"a Ray worker failed: {str(error).splitlines()[0][:300]}") from None
        record_usage(Usage.from_dict(answer.get("usage")))
        return answer

    async def assess(self, claim: Any, **options: Any) -> Any:
        """Check ``claim`` on the next actor; its usage is counted here too."""
        answer = await self._call("assess", claim)
        if answer["error"] is not None:
            raise ClaireError(answer["error"])
        return answer["answer"]

    async def extract(self, block: Any) -> dict[str, Any]:
        """Extract ``block``'s facts on the next actor."""
        return (await self._call("extract", block))["record"]


@asynccontextmanager
async def ray_checker(config: Config) -> AsyncIterator[RayChecker]:
    """Connect to Ray (``eval.ray_address``; unset: start a local Ray of ``eval.ray_workers`` CPUs),
    start ``eval.ray_workers`` actors and yield the checker; the actors end with the block (a Ray
    this call started is shut down)."""
    from claire.agent.registry import system_class

    ray = _ray()
    began = time.perf_counter()
    started = not ray.is_initialized()
    if started:  # in a thread: the driver opens its own index meanwhile
        if config.eval.ray_address:
            await asyncio.to_thread(ray.init, address=config.eval.ray_address, log_to_driver=False)
        else:
            await asyncio.to_thread(ray.init, num_cpus=config.eval.ray_workers, include_dashboard=False,
                                    log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1,
                        max_concurrency=units_per_worker(config))(Worker)
    actors = [remote.remote(config) for _ in range(config.eval.ray_workers)]
    checker = RayChecker(actors, system_class(config.agent.system))

    async def ready() -> None:
        await asyncio.gather(*(actor.pid.remote() for actor in actors))
        checker.start_s = time.perf_counter() - began

    waiting = asyncio.ensure_future(ready())  # the actors open their systems while the driver goes on
    try:
        yield checker
    finally:
        waiting.cancel()
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()
