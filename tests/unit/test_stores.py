"""The vector stores without an engine: what names and addresses they take (the engines
themselves are tested in tests/integration/test_stores.py)."""

from __future__ import annotations

import pytest

from claire.errors import RetrievalError
from claire.indexes.catalog import list_indexes

DIM = 32

TEXTS = {
    "Volcano": ["Volcanoes erupt lava and ash from the mantle.", "Mount Etna is an active volcano in Sicily."],
    "Glacier": ["Glaciers are rivers of ice that flow slowly downhill.", "Ice ages made glaciers cover Europe."],
    "Desert": ["Deserts get little rain and have sparse plants.", "The Sahara desert is hot and dry."],
    "Coral reef": ["Coral reefs grow in warm shallow seas.", "Reefs shelter many kinds of fish."],
}
def test_search_endpoint_urls_are_not_taken_for_a_qdrant_server(tmp_path):
    with pytest.raises(RetrievalError, match="search endpoint, which can only be searched"):
        list_indexes(tmp_path, "http://127.0.0.1:9/api/search")


