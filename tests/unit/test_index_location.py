"""Where embedded indexes live by default: the user data folder, unless retrieval.path says
otherwise (the one-time move of older indexes from the cache folder, over real indexes, is in
tests/integration/test_index_location.py)."""

from __future__ import annotations

from claire.config import Config
from claire.settings import RetrievalConfig, data_dir


def test_indexes_default_to_the_data_folder(clean_env):
    cache, data = clean_env / "cache", clean_env / "data"  # CLAIRE_CACHE_DIR and CLAIRE_DATA_DIR
    assert data_dir() == data and RetrievalConfig().index_root() == data / "indexes"
    assert Config().with_overrides({"retrieval.path": str(cache / "x")}).retrieval.index_root() == cache / "x"


