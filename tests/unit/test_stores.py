"""The vector stores without an engine: what names and addresses they take (the engines
themselves are tested in tests/integration/test_stores.py)."""

from __future__ import annotations

import pytest

from claire.errors import RetrievalError
from claire.indexes.catalog import list_indexes


def test_search_endpoint_urls_are_not_taken_for_a_qdrant_server(tmp_path):
    with pytest.raises(RetrievalError, match="search endpoint, which can only be searched"):
        list_indexes(tmp_path, "http://127.0.0.1:9/api/search")


