"""Running CLAIRE's coroutines: ``run(coro)`` is ``asyncio.run`` on uvloop where it is installed
(Linux and macOS). A batch run with many claims in flight spends a good part of its CPU in the
event loop itself (tasks, callbacks, sockets), and uvloop's loop does that work in C."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on uvloop where it is installed, else asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)
