"""Index builds on disk: a 5 MB block is split, and replacing an index never touches a user's index
named like a temporary one."""

from __future__ import annotations

import numpy as np
import pytest

from claire.domain import Block
from claire.indexes.retriever import build_index
from claire.indexes.catalog import list_indexes, open_index


class ToyEmbedder:
    """A deterministic 8-dimensional embedding (the store and the build are real)."""

    name = model_id = "toy"
    dim = 8

    def encode(self, texts, **_):
        vectors = np.array([[(hash(t) >> s) % 7 + 1 for s in range(8)] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_build_splits_a_5mb_block(tmp_path):
    summary = build_index([Block(id="huge", document_title="Huge", content="word " * 1_000_000)],
                          name="big", embedder=ToyEmbedder(), root=tmp_path, show_progress=False)
    assert summary.split > 800 and summary.blocks == summary.split + 1


def test_replace_never_touches_a_user_index_named_like_a_temporary(tmp_path):
    blocks = [Block(id=f"b{i}", document_title=f"T{i}", content=f"text {i}") for i in range(3)]
    for name in ("k", "k.rebuild", "k-rebuild"):
        build_index(blocks, name=name, embedder=ToyEmbedder(), root=tmp_path, show_progress=False)
    build_index(blocks[:2], name="k", embedder=ToyEmbedder(), root=tmp_path, show_progress=False, replace=True)
    names = {m.name: m.blocks for m in list_indexes(tmp_path)}
    assert names == {"k": 2, "k.rebuild": 3, "k-rebuild": 3}
    with pytest.raises(Exception, match="invalid index name"):
        build_index(blocks, name="_rebuild.k", embedder=ToyEmbedder(), root=tmp_path, show_progress=False)
    open_index("k.rebuild", root=tmp_path).close()
