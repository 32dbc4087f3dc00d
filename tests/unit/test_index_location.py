"""Where embedded indexes live: the user data folder, with a one-time move of the indexes that
older versions kept in the cache folder (real on-disk indexes, real MiniLM embeddings)."""

from __future__ import annotations


import pytest

from claire.config import Config, RetrievalConfig, data_dir
from claire.domain import Block
from claire.indexes.embedders import load_embedder
from claire.indexes.retriever import build_index

BLOCKS = [
    Block(id="mars-0", document_title="Mars", section_title="", content="Mars is the fourth planet from the Sun, the Red Planet."),
    Block(id="piano-0", document_title="Piano", section_title="History", content="Bartolomeo Cristofori invented the piano around 1700."),
    Block(id="bee-0", document_title="Honey bee", section_title="", content="Worker bees dance to tell nestmates where flowers are."),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small real index, built once; each test copies it where it needs it."""
    root = tmp_path_factory.mktemp("built")
    build_index(BLOCKS, name="facts", embedder=load_embedder("minilm"), root=root, show_progress=False)
    return root


@pytest.fixture
def folders(tmp_path, monkeypatch):
    cache, data = tmp_path / "cache", tmp_path / "data"
    monkeypatch.setenv("CLAIRE_CACHE_DIR", str(cache))
    monkeypatch.setenv("CLAIRE_DATA_DIR", str(data))
    return cache, data


def test_indexes_default_to_the_data_folder(folders):
    cache, data = folders
    assert data_dir() == data and RetrievalConfig().index_root() == data / "indexes"
    assert Config().with_overrides({"retrieval.path": str(cache / "x")}).retrieval.index_root() == cache / "x"


