"""Query encoders: the real MiniLM model exported to ONNX and run by ONNX Runtime, checked against
its PyTorch model; the fallbacks and errors when the export cannot be used."""

from __future__ import annotations

import logging
import os
import sys

import numpy as np
import pytest

from claire.errors import RetrievalError
from claire.indexes import query_encoders
from claire.domain import Block
from claire.indexes.embedders import load_embedder
from claire.indexes.query_encoders import OnnxQueryEncoder, TorchQueryEncoder, query_encoder
from claire.indexes.retriever import EXPORT_FOLDER, build_index, open_retriever
from claire.indexes.catalog import list_indexes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TEXTS = ["Who designed the tower?", "x", "The Eiffel Tower was completed in 1889 for the world's fair. " * 20]


@pytest.fixture
def minilm():
    return load_embedder("minilm")


@pytest.fixture
def fresh(monkeypatch):
    """No encoder loaded earlier in this process: every test exports or loads its own."""
    monkeypatch.setattr(query_encoders, "_encoders", {})


def test_the_onnx_export_gives_the_pytorch_vectors(minilm, fresh, tmp_path):
    encoder = query_encoder(minilm, "onnx", folder=tmp_path)
    assert isinstance(encoder, OnnxQueryEncoder) and encoder.runtime == "onnx"
    [export] = list(tmp_path.glob("*.onnx"))
    assert export.name.startswith("all-MiniLM-L6-v2-")
    expected = minilm.encode(TEXTS)
    together = encoder.encode(TEXTS)
    alone = np.concatenate([encoder.encode([text]) for text in TEXTS])
    assert together.dtype == np.float32 and together.shape == (3, minilm.dim)
    assert np.abs(together - expected).max() < 1e-5 and np.abs(alone - expected).max() < 1e-5
    assert query_encoder(minilm, "auto", folder=tmp_path) is encoder  # one session per model and process


def test_a_saved_export_is_reused_and_a_damaged_one_replaced(minilm, fresh, tmp_path, monkeypatch):
    query_encoder(minilm, "onnx", folder=tmp_path)
    [export] = list(tmp_path.glob("*.onnx"))
    reference = export.with_name(export.stem + ".probes.npy")  # the PyTorch vectors it is checked against
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([export.name, reference.name])  # nothing partial
    stamp = export.stat().st_mtime_ns
    monkeypatch.setattr(query_encoders, "_encoders", {})
    with monkeypatch.context() as patch:  # another process: loads the file and checks it without PyTorch
        patch.setattr(minilm, "encode", lambda *a, **k: pytest.fail("PyTorch ran"))
        assert isinstance(query_encoder(minilm, "onnx", folder=tmp_path), OnnxQueryEncoder)
    assert export.stat().st_mtime_ns == stamp
    export.write_bytes(b"not a model")
    reference.write_bytes(b"not vectors either")
    monkeypatch.setattr(query_encoders, "_encoders", {})
    encoder = query_encoder(minilm, "onnx", folder=tmp_path)
    assert export.stat().st_size > 1_000_000  # exported again
    assert np.load(reference).shape == (len(query_encoders.PROBES), minilm.dim)
    assert np.abs(encoder.encode(TEXTS[:1]) - minilm.encode(TEXTS[:1])).max() < 1e-5
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([export.name, reference.name])


def test_runtime_choices_and_fallbacks(minilm, fresh, tmp_path, monkeypatch, caplog):
    assert isinstance(query_encoder(minilm, "torch", folder=tmp_path), TorchQueryEncoder)
    assert not list(tmp_path.iterdir())  # torch needs no export
    with pytest.raises(RetrievalError, match="unknown query runtime 'gpu'"):
        query_encoder(minilm, "gpu", folder=tmp_path)

    monkeypatch.setattr(query_encoders, "TOLERANCE", -1.0)  # no export can pass the check
    with caplog.at_level(logging.WARNING):
        fallback = query_encoder(minilm, "auto", folder=tmp_path)
    assert isinstance(fallback, TorchQueryEncoder)
    assert "embedded with PyTorch" in caplog.text and "differ from PyTorch" in caplog.text
    with pytest.raises(RetrievalError, match=r"cannot run on ONNX Runtime: .*differ from PyTorch's by up to"):
        query_encoder(minilm, "onnx", folder=tmp_path)

    monkeypatch.setattr(query_encoders, "_encoders", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # not installed
    assert isinstance(query_encoder(minilm, "auto", folder=tmp_path), TorchQueryEncoder)
    with pytest.raises(RetrievalError, match="onnxruntime is not installed; set retrieval.query_runtime to auto or torch"):
        query_encoder(minilm, "onnx", folder=tmp_path)


def test_searches_rank_the_same_with_either_runtime(fresh, tmp_path):
    blocks = [Block(id=f"b{i}", document_title=f"T{i}", content=text) for i, text in enumerate([
        "The Eiffel Tower was completed in 1889.", "Gustave Eiffel's company built the tower.",
        "The Statue of Liberty was dedicated in 1886.", "Paris hosted the Exposition Universelle.",
    ])]
    build_index(blocks, name="same", embedder="minilm", root=tmp_path, show_progress=False)
    queries = ["When was the tower finished?", "Who built it?", "New York statue"]
    found = {}
    for runtime in ("torch", "onnx"):
        with open_retriever("same", root=tmp_path, query_runtime=runtime) as retriever:
            assert retriever.query_encoder.runtime == runtime
            found[runtime] = [[(h.block.id, round(h.score, 4)) for h in retriever.search(q, k=4, mode="dense")]
                              for q in queries]
    assert found["onnx"] == found["torch"]
    assert list((tmp_path / EXPORT_FOLDER).glob("*.onnx"))  # kept beside the indexes, which ignore it
    assert [m.name for m in list_indexes(tmp_path)] == ["same"]


