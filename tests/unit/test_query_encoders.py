"""Query encoders: the real MiniLM model exported to ONNX and run by ONNX Runtime, checked against
its PyTorch model; the fallbacks and errors when the export cannot be used."""

from __future__ import annotations

import os

import pytest

from claire.config import Config
from claire.errors import ConfigError
from claire.indexes.embedders import load_embedder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TEXTS = ["Who designed the tower?", "x", "The Eiffel Tower was completed in 1889 for the world's fair. " * 20]


@pytest.fixture
def minilm():
    return load_embedder("minilm")


def test_the_setting_is_checked():
    assert Config().retrieval.query_runtime == "auto"
    assert Config().with_overrides({"retrieval.query_runtime": "torch"}).retrieval.query_runtime == "torch"
    with pytest.raises(ConfigError, match="query_runtime"):
        Config().with_overrides({"retrieval.query_runtime": "gpu"})
