"""The query encoder setting, retrieval.query_runtime, and its checks (the encoders themselves, the
real MiniLM model exported to ONNX beside its PyTorch model, are in
tests/integration/test_query_encoders.py)."""

from __future__ import annotations

import pytest

from claire.config import Config
from claire.errors import ConfigError


def test_the_setting_is_checked():
    assert Config().retrieval.query_runtime == "auto"
    assert Config().with_overrides({"retrieval.query_runtime": "torch"}).retrieval.query_runtime == "torch"
    with pytest.raises(ConfigError, match="query_runtime"):
        Config().with_overrides({"retrieval.query_runtime": "gpu"})
