"""The unit lane's guard: a unit test drives real modules with scripted models and fakes only.

Starting a subprocess, listening on a socket or loading an embedding model fails the test with a
message saying it belongs in ``tests/integration/``. That keeps ``python -m pytest tests/unit``
fast enough to run on every change.
"""

from __future__ import annotations

import socket
import subprocess

import pytest

import claire.indexes.embedders as embedders


class CrossesABoundary(AssertionError):
    """Raised when a unit test reaches for a real process, socket server or model."""


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise CrossesABoundary(f"a unit test {what}: move it to tests/integration/")

    return refuse


@pytest.fixture(autouse=True)
def stays_in_process(monkeypatch):
    """Refuse subprocesses, listening sockets and model loading for the length of a unit test."""
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("started a subprocess"))
    monkeypatch.setattr(socket.socket, "listen", _refuse("listened on a socket"))
    monkeypatch.setattr(embedders, "_load_model", _refuse("loaded an embedding model"))
