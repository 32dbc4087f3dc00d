"""Retrying calls to remote services (the LLM layer, the WikiChat retriever): one transient-error
type, the server's ``Retry-After`` read in all its forms, and tenacity policies that wait what the
server asked (capped) or else back off exponentially with jitter. A leaf module, like ``errors``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable, Mapping

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential
from tenacity.stop import stop_base

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""HTTP answers worth asking again."""


class TransientError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's requested wait in seconds."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def retry_after(headers: Mapping[str, str] | Any | None) -> float | None:
    """Seconds a server asked us to wait: ``retry-after-ms``, or ``retry-after`` in seconds or as
    an HTTP date; None when it did not say (or said something unreadable)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(float(value) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            return max((parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds(), 0.0)
        except (TypeError, ValueError):
            return None


def wait_policy(base: float, max_wait: float, cap: float) -> Callable[[RetryCallState], float]:
    """Wait what the server asked (at most ``cap`` seconds), else random exponential backoff."""
    backoff = wait_random_exponential(multiplier=base, max=max_wait)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, TransientError) and error.retry_after is not None:
            return min(error.retry_after, cap)
        return backoff(state)

    return wait


class _StopWhen(stop_base):
    """Stop after a failure that ``give_up`` holds true for."""

    def __init__(self, give_up: Callable[[BaseException], bool]):
        self.give_up = give_up

    def __call__(self, state: RetryCallState) -> bool:
        outcome = state.outcome
        return outcome is not None and outcome.failed and self.give_up(outcome.exception())


def retrying(attempts: int, *, base: float, max_wait: float, cap: float,
             sleep: Callable[[float], None] | None = None) -> Retrying:
    """A tenacity policy for blocking calls: up to ``attempts`` tries on TransientError, then
    re-raise (``sleep``: how to wait between tries; ``time.sleep`` by default)."""
    options: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
    return Retrying(stop=stop_after_attempt(attempts), wait=wait_policy(base, max_wait, cap),
                    retry=retry_if_exception_type(TransientError), reraise=True, **options)


def async_retrying(attempts: int, *, base: float, max_wait: float, cap: float,
                   sleep: Callable[[float], Awaitable[None]] | None = None,
                   before_sleep: Callable[[RetryCallState], None] | None = None,
                   give_up: Callable[[BaseException], bool] | None = None) -> AsyncRetrying:
    """The same policy for coroutines (``sleep``: how to wait between tries; asyncio's by default;
    ``before_sleep``: told of each failed try before the wait; ``give_up``: a failure it holds
    true for is not tried again, whatever attempts are left)."""
    options: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
    if before_sleep is not None:
        options["before_sleep"] = before_sleep
    stop: Any = stop_after_attempt(attempts)
    if give_up is not None:
        stop = stop | _StopWhen(give_up)
    return AsyncRetrying(stop=stop, wait=wait_policy(base, max_wait, cap),
                         retry=retry_if_exception_type(TransientError), reraise=True, **options)
