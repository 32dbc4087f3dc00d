"""The build encoder's device choice (that its multi-process CPU path gives the same vectors is in
tests/integration/test_encoding.py)."""

from __future__ import annotations

import pytest
import torch

from claire.errors import ConfigError, RetrievalError
from claire.ingestion.encoding import resolve_device


def test_device_choice():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="unknown device 'tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RetrievalError, match="sees no CUDA GPU"):
            resolve_device("cuda")


