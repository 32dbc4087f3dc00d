"""Which LLM failures are worth retrying: :class:`TransientLLMError` (429, 5xx, timeouts, refused
connections, garbled answers; with the server's Retry-After) and :class:`claire.errors.LLMError`
(a bad key, an unknown model: retrying will not help). Provider SDKs share one shape —
``status_code`` and ``response.headers`` on HTTP errors, timeout and connection classes below
them — so errors are read by shape, not by SDK."""

from __future__ import annotations

from claire.errors import LLMError
from claire.retrying import TransientError, retry_after


class TransientLLMError(TransientError):
    """An LLM call worth retrying; ``retry_after`` is the server's requested wait in seconds.
    ``unresponsive``: the endpoint could not be reached or did not answer in time (not a
    per-request failure such as a 429 or a garbled body)."""

    def __init__(self, message: str, retry_after: float | None = None, *, unresponsive: bool = False):
        super().__init__(message, retry_after)
        self.unresponsive = unresponsive


_TIMEOUTS = {"APITimeoutError", "TimeoutException", "TimeoutError", "ReadTimeout", "ConnectTimeout"}
_CONNECTION = {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError", "NetworkError"}
_GARBLED = {"APIResponseValidationError", "JSONDecodeError", "KeyError", "IndexError", "TypeError", "ValidationError",
            "ClientPayloadError", "OutputParserException"}
_REFUSED = {"ClientConnectorError", "ClientConnectorDNSError", "ServerDisconnectedError", "ClientOSError",
            "ConnectionRefusedError", "ConnectionResetError"}


def brief(error: BaseException) -> str:
    """The server's own message in an error, else the error's text, cut to 200 characters."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:200]
    return str(getattr(error, "message", None) or error)[:200]


def status_of(error: BaseException) -> int | None:
    """The HTTP status an error carries (on itself or on its response), if any."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None) if response is not None else None
    return status if isinstance(status, int) else None


def classify_error(error: BaseException, *, endpoint: str, model: str, timeout: float) -> Exception:
    """The error to raise for a failed call: TransientLLMError (retry), LLMError (give up), or
    ``error`` itself when it is none of the known kinds."""
    names = {cls.__name__ for cls in type(error).__mro__}
    status = status_of(error)
    if status is not None:
        headers = getattr(getattr(error, "response", None), "headers", None)
        if 200 <= status < 300:  # the body of a successful answer could not be read
            return TransientLLMError(f"unparseable response from the endpoint: {brief(error)}")
        if status == 401:
            return LLMError(f"the LLM endpoint {endpoint} rejected the API key (401): set OPENAI_API_KEY "
                            "(or llm.api_key_env, or the provider's own key variable) to a valid key")
        if status == 403:
            return LLMError(f"the LLM endpoint {endpoint} refused access (403): {brief(error)}")
        if status == 404:
            return LLMError(f"model '{model}' was not found at {endpoint} (404: {brief(error)}); "
                            "set --model / llm.model to a model that endpoint serves")
        if status == 429:
            return TransientLLMError("rate limited (429)", retry_after(headers))
        if status in (408, 409, 425) or status >= 500:
            return TransientLLMError(f"server error ({status})", retry_after(headers))
        return LLMError(f"the LLM endpoint answered HTTP {status}: {brief(error)}")
    if refused(error):
        return TransientLLMError(f"cannot connect to {endpoint}", unresponsive=True)
    if names & _TIMEOUTS:
        return TransientLLMError(f"no answer within {timeout:g} s (timeout)", unresponsive=True)
    if names & _CONNECTION:
        return TransientLLMError(f"cannot connect to {endpoint}", unresponsive=True)
    if names & _GARBLED:
        return TransientLLMError(f"unparseable response from the endpoint: {type(error).__name__}")
    return error


def refused(error: BaseException) -> bool:
    """Whether the connection itself failed (refused, reset, no route) somewhere down the cause
    chain: aiohttp reports those as a connect *timeout*, which they are not."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if type(cause).__name__ in _REFUSED:
            return True
        cause = cause.__cause__ or cause.__context__
    return False
