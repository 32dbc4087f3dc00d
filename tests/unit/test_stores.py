"""Both vector stores — the embedded engine and the server path (qdrant-client local mode) — on
real engines, with a tiny bag-of-words embedding standing in for the sentence embedder."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from claire.errors import RetrievalError
from claire.indexes.corpus import Block
from claire.indexes.stores import list_indexes

DIM = 32

TEXTS = {
    "Volcano": ["Volcanoes erupt lava and ash from the mantle.", "Mount Etna is an active volcano in Sicily."],
    "Glacier": ["Glaciers are rivers of ice that flow slowly downhill.", "Ice ages made glaciers cover Europe."],
    "Desert": ["Deserts get little rain and have sparse plants.", "The Sahara desert is hot and dry."],
    "Coral reef": ["Coral reefs grow in warm shallow seas.", "Reefs shelter many kinds of fish."],
}
BLOCKS = [
    Block(id=f"{title}-{i}", document_title=title, section_title="Overview", content=text)
    for title, texts in TEXTS.items()
    for i, text in enumerate(texts)
]


def toy_vector(text: str) -> np.ndarray:
    """Hashed bag of words, L2-normalised: similar words give similar vectors."""
    vector = np.zeros(DIM, dtype=np.float32)
    for word in text.lower().replace(".", " ").split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector / np.linalg.norm(vector)


def search(store, query: str, **kwargs):
    return store.search(dense=toy_vector(query), text=query, **{"exclude_title": None, "k": 3, **kwargs})


def test_search_endpoint_urls_are_not_taken_for_a_qdrant_server(tmp_path):
    with pytest.raises(RetrievalError, match="search endpoint, which can only be searched"):
        list_indexes(tmp_path, "http://127.0.0.1:9/api/search")


