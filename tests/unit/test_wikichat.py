"""The WikiChat search client against a local HTTP server that speaks the API's shape."""

from __future__ import annotations

import socket

import pytest

from claire.errors import RetrievalError
from claire.indexes.wikichat import WikiChatRetriever


def test_unreachable_server_is_retried_then_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = WikiChatRetriever(f"http://127.0.0.1:{port}/x", max_attempts=2, max_wait=0.05)
    with client, pytest.raises(RetrievalError, match=r"failed after 2 attempts \(ConnectError"):
        client.search("tower")


