"""Pytest fixtures shared by both lanes: private CLAIRE folders for every test, the shared
WikiCollide sample, the claims of tests/fixtures/wikicollide_mini.json, a local OpenAI-compatible
server, an environment cleared of the developer's CLAIRE_*/OPENAI_* settings, and the demo index
built once per session with the real embedder (``copy_demo_index`` puts a copy where a test wants it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from claire.config import SECTIONS
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.testing.cli import LEFT_OUT
from claire.testing.mock_openai import MockOpenAIServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED_SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikicollide" / "dev-sample.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _a_setting(name: str) -> bool:
    """Whether a variable is one of the developer's own settings, which a configuration would read:
    OPENAI_*, CLAIRE_PRESET, CLAIRE_SECTION and CLAIRE_SECTION__FIELD (misspelt sections too) and
    CLAIRE_SERVE_*. The test switches (CLAIRE_TEST_GGUF, CLAIRE_LOCAL_LLM_URL, CLAIRE_SCREENSHOTS) stay."""
    upper = name.upper()
    if upper.startswith("OPENAI_"):
        return True
    if not upper.startswith("CLAIRE_"):
        return False
    rest = upper[len("CLAIRE_"):].lower()
    return rest == "preset" or rest.startswith("serve_") or "__" in rest or rest in SECTIONS


@pytest.fixture(scope="session", autouse=True)
def private_user_folders(tmp_path_factory):
    """No test reads or writes the user's own CLAIRE folders: the data folder (indexes, saved
    checks) and the cache folder point at this session's tmp folders. (Both, so that the one-time
    move of indexes from the cache to the data folder never takes the user's indexes into tmp.)
    Tests and fixtures that need their own folders set the variables again. The shell's own
    settings (:func:`_a_setting`) are cleared: configurations resolve from the defaults."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if _a_setting(name):
                patch.delenv(name)
        patch.setenv("CLAIRE_DATA_DIR", str(tmp_path_factory.mktemp("claire-data")))
        patch.setenv("CLAIRE_CACHE_DIR", str(tmp_path_factory.mktemp("claire-cache")))
        yield


@pytest.fixture(autouse=True)
def private_data_dir(monkeypatch, tmp_path):
    """Saved interactive checks go to the test's own folder, never the user's data directory."""
    monkeypatch.setenv("CLAIRE_DATA_DIR", str(tmp_path / "claire-data"))


@pytest.fixture
def shared_sample() -> Path:
    """The shared WikiCollide sample beside this checkout; the test skips when it is absent."""
    if not SHARED_SAMPLE.is_file():
        pytest.skip("the shared WikiCollide sample (../shared/data/wikicollide/) is not beside this checkout")
    return SHARED_SAMPLE


@pytest.fixture
def mini_claims():
    """The ten claims of tests/fixtures/wikicollide_mini.json, a small file in WikiCollide's format."""
    return load_wikicollide(FIXTURES / "wikicollide_mini.json")


@pytest.fixture
def openai_server():
    with MockOpenAIServer() as server:
        yield server


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No CLAIRE_* or OPENAI_* variables from the developer's shell; cache and data folders under tmp."""
    for name in list(os.environ):
        if name.startswith(LEFT_OUT):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAIRE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CLAIRE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def demo_index_root(tmp_path_factory) -> Path:
    """An index folder holding the real demo index (the real embedder), built once for the whole
    session. Read it only; a test that may change an index takes a copy (``copy_demo_index``)."""
    from claire.indexes.retriever import ensure_demo_index

    root = tmp_path_factory.mktemp("demo-index") / "indexes"
    ensure_demo_index(root)
    return root


@pytest.fixture(scope="session")
def copy_demo_index(demo_index_root) -> Callable[[Path], Path]:
    """Copy the session's demo index into an index folder of the test's own (created if missing);
    the folder is returned. Copying costs milliseconds where building costs seconds."""
    def copy(root: Path) -> Path:
        shutil.copytree(demo_index_root, root, dirs_exist_ok=True)
        return root

    return copy


@pytest.fixture(scope="session")
def multilingual_index_root(tmp_path_factory) -> Path:
    """An index folder holding the real multilingual demo index (English, French and German blocks
    with the offline e5-small embedder), built once for the whole session. Read it only."""
    from claire.indexes.retriever import MULTILINGUAL_DEMO, ensure_demo_index

    root = tmp_path_factory.mktemp("multilingual-index") / "indexes"
    ensure_demo_index(root, name=MULTILINGUAL_DEMO)
    return root
