"""The build encoder: device choice and the multi-process CPU path give the same vectors."""

from __future__ import annotations

import numpy as np

from claire.indexes.embedders import load_embedder
from claire.ingestion.encoding import BatchEncoder

TEXTS = ["Marie Curie > Awards\n| 1911 | Chemistry |", "Zürich lies on Lake Zurich.", "A short one.", "Bridges " * 40]


def test_cpu_processes_and_seq_cap_give_unit_vectors_like_the_plain_path():
    embedder = load_embedder("minilm")
    plain = BatchEncoder(embedder, device="cpu")
    expected = plain.encode(TEXTS)
    plain.close()
    pooled = BatchEncoder(embedder, device="cpu", processes=2, batch_size=2)
    try:
        got = pooled.encode(TEXTS)
    finally:
        pooled.close()
    assert got.shape == (4, embedder.dim) and got.dtype == np.float32
    assert np.allclose(got, expected, atol=1e-5)
    capped = BatchEncoder(embedder, device="cpu", max_seq_length=8)
    short = capped.encode(TEXTS)
    capped.close()
    assert embedder.model.max_seq_length == 256  # restored for the rest of the process
    assert np.allclose(np.linalg.norm(short, axis=1), 1.0, atol=1e-5) and not np.allclose(short[3], expected[3])
