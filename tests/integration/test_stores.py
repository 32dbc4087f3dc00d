"""Both vector stores — the embedded engine and the server path (qdrant-client local mode) — on
real engines, with a tiny bag-of-words embedding standing in for the sentence embedder."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from claire.errors import RetrievalError
from claire.domain import Block
from claire.indexes.edge_store import EdgeStore
from claire.indexes.index_meta import IndexMeta
from claire.indexes.server_store import ServerStore
from claire.indexes.catalog import delete_index, list_indexes, open_index

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


def toy_meta() -> IndexMeta:
    return IndexMeta(name="", embedder="toy", embedder_model="toy/bag-of-words", dim=DIM)


@pytest.fixture(params=["edge", "server"])
def location(request, tmp_path) -> tuple[Path, str | None]:
    """(root, url): the embedded engine under root, or qdrant-client local mode via a file: url."""
    return tmp_path / "indexes", (f"file:{tmp_path / 'qdrant'}" if request.param == "server" else None)


def build(location, name: str = "geo") -> None:
    root, url = location
    store = open_index(name, root=root, url=url, create_meta=toy_meta())
    store.upsert(BLOCKS, np.stack([toy_vector(b.embed_text()) for b in BLOCKS]))
    store.finalize()
    store.close()


def search(store, query: str, **kwargs):
    return store.search(dense=toy_vector(query), text=query, **{"exclude_title": None, "k": 3, **kwargs})


def test_build_reopen_and_search_in_every_mode(location):
    root, url = location
    build(location)
    with open_index("geo", root=root, url=url) as store:
        meta = store.meta
        assert (meta.blocks, meta.documents, meta.complete, meta.dim) == (8, 4, True, DIM)
        assert meta.embedder_model == "toy/bag-of-words" and meta.backend == ("server" if url else "edge")
        assert store.count() == 8
        assert store.size_on_disk() > 0
        for mode in ("hybrid", "dense", "bm25"):
            hits = search(store, "Sahara desert dry", mode=mode)
            assert hits[0][0].id == "Desert-1", mode
            assert hits[0][1] >= hits[-1][1]
        assert search(store, "the and of", mode="bm25") == []  # stop words only


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_title_exclusion_really_excludes(location, mode):
    root, url = location
    build(location)
    with open_index("geo", root=root, url=url) as store:
        hits = search(store, "volcano lava Etna", mode=mode, exclude_title="Volcano", k=10)
        titles = {block.document_title for block, _ in hits}
        assert "Volcano" not in titles
        if mode != "bm25":  # every other block is a dense neighbour
            assert len(hits) == 6


def test_bad_queries_and_vectors_are_explained(location):
    root, url = location
    build(location)
    with open_index("geo", root=root, url=url) as store:
        with pytest.raises(RetrievalError, match="32-dimensional"):
            store.search(dense=None, text="ice", exclude_title=None, k=3)
        with pytest.raises(RetrievalError, match="query text"):
            store.search(dense=toy_vector("ice"), text=None, exclude_title=None, k=3, mode="bm25")
        with pytest.raises(RetrievalError, match="32-dimensional"):
            store.upsert(BLOCKS[:1], np.zeros((1, 8), dtype=np.float32))


def test_open_list_and_delete_by_name(location):
    root, url = location
    with pytest.raises(RetrievalError, match="no index named geo .*available: none yet"):
        open_index("geo", root=root, url=url)
    build(location)
    build(location, "geo2")
    assert [m.name for m in list_indexes(root, url)] == ["geo", "geo2"]
    with pytest.raises(RetrievalError, match="already exists"):
        open_index("geo", root=root, url=url, create_meta=toy_meta())
    with pytest.raises(RetrievalError, match="available: geo, geo2"):
        open_index("nope", root=root, url=url)
    with pytest.raises(RetrievalError, match="invalid index name"):
        open_index("../escape", root=root, url=url)
    delete_index("geo", root=root, url=url)
    assert [m.name for m in list_indexes(root, url)] == ["geo2"]
    with pytest.raises(RetrievalError, match="no index named geo"):
        delete_index("geo", root=root, url=url)


def test_unfinished_index_is_refused(location):
    root, url = location
    store = open_index("half", root=root, url=url, create_meta=toy_meta())
    store.upsert(BLOCKS[:2], np.stack([toy_vector(b.embed_text()) for b in BLOCKS[:2]]))
    store.close()
    if url is None:  # embedded: an unfinished build is never published and is discarded on close
        with pytest.raises(RetrievalError, match="no index named half"):
            open_index("half", root=root, url=url)
        assert list_indexes(root, url) == []
        assert not (root / "half").exists()
        return
    with pytest.raises(RetrievalError, match="never finished"):
        open_index("half", root=root, url=url)
    assert [m.complete for m in list_indexes(root, url)] == [False]


def test_second_process_opens_an_embedded_index_that_is_open_here(tmp_path):
    root = tmp_path / "indexes"
    build((root, None))
    script = (
        "from pathlib import Path\n"
        "from claire.indexes.catalog import open_index\n"
        f"with open_index('geo', root=Path({str(root)!r})) as store:\n"
        "    print(store.count())\n"
    )
    with open_index("geo", root=root) as store:
        other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert [b.id for b, _ in search(store, "coral reef fish", k=1)] == ["Coral reef-1"]
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "8"
    assert not (root / "geo" / ".views").exists()  # both views were removed on close


def test_second_process_gets_a_clear_error_in_local_mode(tmp_path):
    location = (tmp_path / "indexes", f"file:{tmp_path / 'qdrant'}")
    root, url = location
    build(location)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from claire.errors import RetrievalError\n"
        "from claire.indexes.catalog import open_index\n"
        "try:\n"
        f"    open_index('geo', root=Path({str(root)!r}), url={url!r})\n"
        "except RetrievalError as error:\n"
        "    print(error)\n"
        "    sys.exit(3)\n"
    )
    with open_index("geo", root=root, url=url):
        other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert other.returncode == 3, other.stderr
    assert "in use by another process" in other.stdout
    assert "Traceback" not in other.stderr


def test_store_classes_open_their_locations_directly(tmp_path):
    build((tmp_path / "indexes", None))
    with EdgeStore(tmp_path / "indexes" / "geo") as store:
        assert store.meta.name == "geo" and store.count() == 8
    server = ServerStore(path=tmp_path / "qdrant", collection="geo")
    assert not server.exists
    server.create(toy_meta())
    server.upsert(BLOCKS, np.stack([toy_vector(b.embed_text()) for b in BLOCKS]))
    server.finalize()
    assert server.meta.name == "geo"
    assert [b.id for b, _ in search(server, "coral reef fish", k=2)] == ["Coral reef-1", "Coral reef-0"]
    server.close()


def test_count_title_on_both_backends(tmp_path):
    blocks = [Block(id=f"b{i}", document_title="Alpha" if i < 2 else "Beta", content=f"text {i}") for i in range(3)]
    dense = np.eye(3, 4, dtype=np.float32)
    for store in (EdgeStore(tmp_path / "edge"), ServerStore(path=str(tmp_path / "local"), collection="t")):
        store.create(IndexMeta(name="t", embedder="e", embedder_model="e", dim=4))
        store.upsert(blocks, dense)
        store.finalize()
        assert store.count_title("Alpha") == 2 and store.count_title("Beta") == 1 and store.count_title("Gamma") == 0
        assert store.meta.documents == 2
        store.delete(["b2"])  # Beta's only block: an article an update removed
        store.finalize()
        assert store.meta.documents == 1 and store.meta.blocks == 2  # the removed article is not counted
        store.close()


def test_tied_fused_scores_are_ordered_by_id_so_rankings_repeat(tmp_path):
    # "tie-b" is first by dense similarity and second by BM25, "tie-a" the other way round:
    # their RRF scores tie exactly, and the engine alone would order them arbitrarily
    blocks = [
        Block(id="tie-b", document_title="B", content="a bridge"),
        Block(id="tie-a", document_title="A", content="a bridge over the river bridge"),
        Block(id="other", document_title="C", content="nothing relevant here"),
    ]
    dense = np.array([[1, 0, 0, 0], [0.9, 0.436, 0, 0], [0, 0, 1, 0]], dtype=np.float32)
    store = EdgeStore(tmp_path / "edge")
    store.create(IndexMeta(name="t", embedder="e", embedder_model="e", dim=4))
    store.upsert(blocks, dense)
    store.finalize()
    for _ in range(5):
        found = store.search(dense=dense[0], text="river bridge", exclude_title=None, k=2, mode="hybrid")
        assert [b.id for b, _ in found] == ["tie-a", "tie-b"]
        assert found[0][1] == found[1][1]
    store.close()


def test_an_index_folder_from_before_versions_is_shared_and_replaced(tmp_path):
    """Folders written by earlier versions (``shard/`` with a write-ahead log beside ``meta.json``)
    open in several places at once, and a rebuild turns them into a versioned folder."""
    import json

    import qdrant_edge as edge

    from claire.indexes import sparse

    root = tmp_path / "indexes"
    folder = root / "old"
    shard = edge.EdgeShard.create(str(folder / "shard"), edge.EdgeConfig(
        vectors={"dense": edge.EdgeVectorParams(size=DIM, distance=edge.Distance.Cosine)},
        sparse_vectors={"bm25": edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)}))
    shard.update(edge.UpdateOperation.create_field_index("document_title", edge.PayloadSchemaType.Keyword))
    shard.update(edge.UpdateOperation.upsert_points([
        edge.Point(i, {"dense": toy_vector(b.embed_text()).tolist(), "bm25": sparse.document_vector(b.embed_text())},
                   b.model_dump(exclude_none=True)) for i, b in enumerate(BLOCKS)]))
    shard.flush()
    shard.close()
    meta = {**toy_meta().to_dict(), "name": "old", "backend": "edge", "blocks": 8, "complete": True}
    (folder / "meta.json").write_text(json.dumps(meta))
    assert (folder / "shard" / "wal").is_dir()
    with open_index("old", root=root) as first, open_index("old", root=root) as second:
        assert first.count() == second.count() == 8
        assert [b.id for b, _ in search(second, "coral reef fish", k=1)] == ["Coral reef-1"]
    store = open_index("old", root=root, create_meta=toy_meta(), replace=True)
    store.upsert(BLOCKS[:2], np.stack([toy_vector(b.embed_text()) for b in BLOCKS[:2]]))
    store.finalize()
    store.close()
    assert not (folder / "shard").exists() and json.loads((folder / "meta.json").read_text())["version"].startswith(".v-")
    with open_index("old", root=root) as reopened:
        assert reopened.count() == 2


def test_views_of_readers_that_died_are_removed(tmp_path):
    import os
    import time

    from claire.indexes import sharing

    root = tmp_path / "indexes"
    build((root, None))
    dead = root / "geo" / sharing.VIEWS / "999999-dead"
    (dead / "shard").mkdir(parents=True)
    (dead / ".lock").touch()
    old = time.time() - 2 * sharing.STALE_AFTER_S
    os.utime(dead, (old, old))
    with open_index("geo", root=root) as store:  # a live reader's view stays
        live = store._view.view
        os.utime(live, (old, old))
        sharing.prune_views(root / "geo")
        assert live.is_dir() and not dead.exists()
        assert store.count() == 8
    assert not (root / "geo" / sharing.VIEWS).exists()


def test_a_folder_that_is_not_an_index_is_left_alone(tmp_path):
    root = tmp_path / "indexes"
    (root / "mine").mkdir(parents=True)
    (root / "mine" / "notes.txt").write_text("my own files")
    with pytest.raises(RetrievalError, match="exists but is not a CLAIRE index"):
        open_index("mine", root=root, create_meta=toy_meta())
    assert sorted(p.name for p in (root / "mine").iterdir()) == ["notes.txt"]


def test_readers_opening_during_repeated_swaps_always_see_a_complete_version(tmp_path):
    import threading
    import traceback

    root = tmp_path / "indexes"
    sizes = [2, 3, 4, 5, 6, 7, 8]

    def build_of(size: int, replace: bool) -> None:
        store = open_index("flux", root=root, create_meta=toy_meta(), replace=replace)
        store.upsert(BLOCKS[:size], np.stack([toy_vector(b.embed_text()) for b in BLOCKS[:size]]))
        store.finalize()
        store.close()

    build_of(sizes[0], False)
    seen, errors, done = [], [], threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                with open_index("flux", root=root) as store:
                    seen.append((store.meta.blocks, store.count(), len(search(store, "ice glaciers", k=10))))
            except Exception:  # noqa: BLE001 - the test reports any failure
                errors.append(traceback.format_exc())

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for size in sizes[1:]:
            build_of(size, True)
    finally:
        done.set()
        for thread in threads:
            thread.join(60)
    assert errors == []
    assert seen and all(meta == count == found and count in sizes for meta, count, found in seen)
    with open_index("flux", root=root) as store:
        assert store.count() == 8
    assert len([p for p in (root / "flux").iterdir() if p.name.startswith(".v-")]) == 1
