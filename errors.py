"""Errors CLAIRE reports to a person: each carries a message that says what to do.

The CLI prints ``str(error)`` and exits non-zero for any :class:`ClaireError`; nothing else in
the package should need a traceback to be understood. A leaf module: every layer may import it.
"""


class ClaireError(Exception):
    """A problem with input, configuration or an outside service, explained in words."""

    exit_code = 2


class ConfigError(ClaireError):
    """An invalid configuration value or file."""


class LLMError(ClaireError):
    """The LLM endpoint could not give a usable answer (after retries where that makes sense)."""


class RetrievalError(ClaireError):
    """An index, embedder or search backend problem."""


class DatasetError(ClaireError):
    """A malformed dataset or corpus file."""
