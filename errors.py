"""Errors CLAIRE reports to a person: each carries a message that says what to do.

The CLI prints ``str(error)`` and exits non-zero for any :class:`ClaireError`; nothing else in
the package should need a traceback to be understood. A leaf module: every layer may import it.
Messages never carry secrets: :func:`redact` masks the password part of URLs
(``https://user:KEY@host``), query parameters that carry one (``?api-key=KEY``, ``&token=…``) and every secret registered with :func:`register_secret` (the
configured API keys), and a ClaireError's text is always redacted.
"""

from __future__ import annotations

import re
from enum import IntEnum

_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
_SECRET_PARAM = re.compile(
    r"(?P<name>[?&;](?:[\w.-]*[-_.])?(?:key|apikey|api[-_]?key|token|access[-_]?token|secret|password|passwd|pwd|sig|"
    r"signature|auth|authorization|credentials?|client[-_]?secret|session)=)(?P<value>[^&#\s\"'<>]+)", re.IGNORECASE)
_SECRETS: set[str] = set()


def register_secret(secret: str | None) -> None:
    """Mask this value wherever :func:`redact` runs (too-short values are ignored)."""
    if secret and len(secret) >= 6:
        _SECRETS.add(secret)


def mask(secret: str | None) -> str | None:
    """A secret shown as ``****`` plus, for long ones, its last four characters."""
    if not secret:
        return None
    return "****" + secret[-4:] if len(secret) > 12 else "****"


def redact(text: str) -> str:
    """``text`` with URL credentials (``user:pw@``, and query parameters that carry a key, token,
    secret or password) and registered secrets masked."""
    if "@" in text:  # credentials in a URL need one: most text skips the pattern's scan
        text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}****@", text)
    if "=" in text:
        text = _SECRET_PARAM.sub(lambda m: f"{m.group('name')}****", text)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, mask(secret) or "****")
    return text


class ExitCode(IntEnum):
    """What every ``claire`` command's exit status means (one meaning per number, for every command)."""

    OK = 0  # done, and nothing flagged: consistent, supported, no fact of a scan flagged, a run finished
    FLAGGED = 1  # done, and something flagged: inconsistent, refuted, a citation not supported, a scan's fact
    ERROR = 2  # not done: bad input or configuration, an endpoint or index problem, or no verdict (a failed check)
    NOTHING_TO_CHECK = 3  # the text holds no checkable fact (extract, scan)
    INTERRUPTED = 130  # stopped with Ctrl-C


class ClaireError(Exception):
    """A problem with input, configuration or an outside service, explained in words."""

    exit_code: int = ExitCode.ERROR

    def __str__(self) -> str:
        return redact(super().__str__())


class ConfigError(ClaireError):
    """An invalid configuration value or file."""


class LLMError(ClaireError):
    """The LLM endpoint could not give a usable answer (after retries where that makes sense)."""


class LLMUnavailable(LLMError):
    """The LLM endpoint itself kept failing — unreachable, not answering in time, rate limited or
    answering with server errors through every retry — rather than this request: asking again
    later may well work (a patrol puts the edit back in its queue)."""


class RetrievalError(ClaireError):
    """An index, embedder or search backend problem."""


class DatasetError(ClaireError):
    """A malformed dataset or corpus file."""


class NothingToCheck(ClaireError):
    """The text holds no checkable fact (nothing went wrong, and nothing could be checked)."""

    exit_code = ExitCode.NOTHING_TO_CHECK
