"""Where embedded indexes live: the user data folder, with a one-time move of the indexes that
older versions kept in the cache folder (real on-disk indexes, real MiniLM embeddings)."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from claire.settings import RetrievalConfig
from claire.domain import Block
from claire.indexes.embedders import load_embedder
from claire.indexes.retriever import build_index, open_retriever
from claire.indexes.catalog import list_indexes
from claire.testing.cli import run_claire

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


def place(built, root, name="facts"):
    shutil.copytree(built / "facts", root / name)


def searched(root):
    with open_retriever("facts", root=root) as retriever:
        return retriever.search("Who invented the piano?", k=1)[0].block.id


def test_indexes_in_the_cache_folder_are_moved_once_then_opened_and_searched(built, folders, capsys):
    cache, data = folders
    place(built, cache / "indexes")
    root = RetrievalConfig().index_root()
    assert root == data / "indexes" and not (cache / "indexes").exists()
    assert capsys.readouterr().err.count("moved the indexes") == 1
    assert [m.name for m in list_indexes(root)] == ["facts"] and searched(root) == "piano-0"
    assert RetrievalConfig().index_root() == root and capsys.readouterr().err == ""  # once only


def test_when_both_folders_exist_both_are_left_and_the_data_one_is_used(built, folders, capsys):
    cache, data = folders
    place(built, cache / "indexes", "old")
    place(built, data / "indexes")
    assert RetrievalConfig().index_root() == data / "indexes"
    assert [p.name for p in (cache / "indexes").iterdir()] == ["old"] and len(list_indexes(cache / "indexes")) == 1
    assert [m.name for m in list_indexes(data / "indexes")] == ["facts"] and searched(data / "indexes") == "piano-0"
    assert capsys.readouterr().err == ""


def test_across_file_systems_the_indexes_are_copied_then_deleted(built, folders, monkeypatch, capsys):
    cache, data = folders
    place(built, cache / "indexes")
    rename = os.replace

    def other_device(src, dst):
        if os.fspath(src) == os.fspath(cache / "indexes"):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return rename(src, dst)

    monkeypatch.setattr(os, "replace", other_device)
    root = RetrievalConfig().index_root()
    assert root == data / "indexes" and not (cache / "indexes").exists()
    assert [p.name for p in data.iterdir()] == ["indexes"]  # no half-copied folder left behind
    assert searched(root) == "piano-0" and "moved the indexes" in capsys.readouterr().err


def test_a_failed_copy_loses_nothing_and_the_old_folder_is_used(built, folders, monkeypatch, capsys):
    cache, data = folders
    place(built, cache / "indexes")
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError(errno.EXDEV, "cross-device")))
    monkeypatch.setattr(shutil, "copytree", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    root = RetrievalConfig().index_root()
    assert root == cache / "indexes" and not (data / "indexes").exists()
    assert searched(root) == "piano-0"
    assert "could not move the indexes" in capsys.readouterr().err


def test_the_command_line_moves_them_and_lists_them(built, tmp_path):
    cache, data = tmp_path / "cache", tmp_path / "data"
    place(built, cache / "indexes")
    result = run_claire("index", "list", cache=cache, env={"CLAIRE_DATA_DIR": str(data)}, columns=200)
    assert result.returncode == 0, result.stderr
    assert "facts" in result.stdout and "moved the indexes" in result.stderr
    assert (data / "indexes" / "facts").is_dir() and not (cache / "indexes").exists()
