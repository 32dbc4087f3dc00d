"""Retriever and index building with the real offline MiniLM embedder on hand-written blocks."""

from __future__ import annotations

import asyncio
import json
import os

import numpy as np
import pytest

from claire.errors import DatasetError, RetrievalError
from claire.domain import Block
from claire.indexes.embedders import load_embedder
from claire.indexes.registry import open_searcher
from claire.indexes.retriever import Retriever, build_index, ensure_demo_index, open_retriever
from claire.indexes.index_meta import IndexMeta
from claire.indexes.catalog import list_indexes, open_index
from claire.indexes.wikichat import WikiChatRetriever

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PASSAGES = {
    "Mars": [
        ("", "Mars is the fourth planet from the Sun, often called the Red Planet because of iron oxide dust."),
        ("Moons", "Mars has two small moons, Phobos and Deimos, which may be captured asteroids."),
    ],
    "Jupiter": [("", "Jupiter is the largest planet in the Solar System, a gas giant with a Great Red Spot storm.")],
    "Honey bee": [
        ("", "The honey bee lives in colonies with a single queen, many workers and a few drones."),
        ("Communication", "Worker bees perform a waggle dance to tell nestmates where flowers are."),
    ],
    "Violin": [("", "The violin is a bowed string instrument with four strings tuned in perfect fifths.")],
    "Piano": [("History", "Bartolomeo Cristofori invented the piano in Florence around the year 1700.")],
    "Mount Everest": [
        ("", "Mount Everest is Earth's highest mountain above sea level, on the border of Nepal and China."),
        ("Ascents", "Tenzing Norgay and Edmund Hillary made the first confirmed ascent of Everest in 1953."),
    ],
    "Amazon River": [("", "The Amazon River in South America carries more water than any other river.")],
    "Photosynthesis": [("", "Photosynthesis lets plants turn light, water and carbon dioxide into sugar and oxygen.")],
    "Penicillin": [
        ("Discovery", "Alexander Fleming discovered penicillin in 1928 when mould killed bacteria in a dish.")
    ],
    "Great Wall of China": [("", "The Great Wall of China is a series of fortifications built across northern China.")],
    "Chess": [("Rules", "In chess, a pawn that reaches the far rank is promoted, usually to a queen.")],
    "Espresso": [("", "Espresso is coffee brewed by forcing hot water through finely ground beans under pressure.")],
    "Tour de France": [("", "The Tour de France is a men's multi-stage bicycle race held mainly in France each July.")],
    "Black hole": [
        ("", "A black hole is a region of spacetime where gravity is so strong that not even light escapes.")
    ],
    "Volcano": [("Types", "Shield volcanoes such as Mauna Loa are built from fluid basaltic lava flows.")],
    "Edmund Hillary": [
        ("", "Edmund Hillary was a New Zealand mountaineer who climbed Everest with Tenzing Norgay in 1953.")
    ],
}
BLOCKS = [
    Block(id=f"{title}-{i}", document_title=title, section_title=section, content=content)
    for title, items in PASSAGES.items()
    for i, (section, content) in enumerate(items)
]


@pytest.fixture(scope="module")
def minilm():
    return load_embedder("minilm")


@pytest.fixture(scope="module")
def index_root(tmp_path_factory, minilm):
    root = tmp_path_factory.mktemp("indexes")
    summary = build_index(BLOCKS, name="facts", embedder=minilm, root=root, show_progress=False)
    assert (summary.blocks, summary.documents) == (len(BLOCKS), len(PASSAGES))
    assert summary.size_on_disk > 0 and summary.blocks_per_s > 0
    return root


def test_embedder_gives_unit_float32_vectors(minilm):
    vectors = minilm.encode(["one sentence", "another one"], show_progress=True)
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384) and minilm.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.encode([]).shape == (0, 384)
    assert np.allclose(minilm.encode_query("one sentence"), vectors[0], atol=1e-5)
    assert load_embedder("minilm") is minilm  # cached per process


@pytest.mark.skipif(os.environ.get("HF_HUB_OFFLINE") != "1", reason="would wait on hub retries")
def test_hub_only_embedder_fails_with_advice_when_offline():
    with pytest.raises(RetrievalError, match="needs network access.*--embedder minilm"):
        load_embedder("mgte")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Which planet is known as the red planet?", "Mars-0"),
        ("Who invented the piano?", "Piano-0"),
        ("How do bees tell each other where food is?", "Honey bee-1"),
        ("Who discovered penicillin?", "Penicillin-0"),
    ],
)
def test_search_finds_the_obviously_relevant_block(index_root, query, expected):
    with open_retriever("facts", root=index_root) as retriever:
        for mode in ("hybrid", "dense"):
            hits = retriever.search(query, k=5, mode=mode)
            assert hits[0].block.id == expected, (mode, [h.block.id for h in hits])
            assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_search_excludes_the_claims_own_article(index_root):
    with open_retriever("facts", root=index_root) as retriever:
        query = "Edmund Hillary and Tenzing Norgay climbed Everest in 1953"
        for mode in ("hybrid", "dense", "bm25"):
            hits = retriever.search(query, exclude_title="Mount Everest", k=5, mode=mode)
            assert hits[0].block.document_title == "Edmund Hillary", mode
            assert all(h.block.document_title != "Mount Everest" for h in hits)


async def test_concurrent_searches_from_threads_agree(index_root):
    with open_retriever("facts", root=index_root) as retriever:
        queries = ["Phobos and Deimos", "coffee brewing", "bicycle race", "string instrument"] * 3
        results = await asyncio.gather(*(asyncio.to_thread(retriever.search, q, k=3) for q in queries))
        firsts = [r[0].block.id for r in results]
        assert firsts[:4] == ["Mars-1", "Espresso-0", "Tour de France-0", "Violin-0"]
        assert firsts == firsts[:4] * 3


def test_embedder_mismatch_is_an_error(tmp_path, minilm):
    store = open_index(
        "other", root=tmp_path, create_meta=IndexMeta(name="", embedder="tiny", embedder_model="acme/tiny", dim=8)
    )
    store.upsert(BLOCKS[:1], np.ones((1, 8), dtype=np.float32) / np.sqrt(8))
    store.finalize()
    with pytest.raises(
        RetrievalError, match=r"index other was built with tiny \(acme/tiny, dim 8\); you asked for minilm"
    ):
        Retriever(store, minilm)
    store.close()
    with pytest.raises(RetrievalError, match="was built with tiny"):
        open_retriever("other", root=tmp_path, embedder_spec="minilm")
    open_index("other", root=tmp_path).close()  # the failed open released the index


def test_build_refuses_existing_name_unless_replace(index_root, minilm):
    with pytest.raises(RetrievalError, match="already exists; pass --replace"):
        build_index(BLOCKS[:3], name="facts", embedder=minilm, root=index_root, show_progress=False)
    summary = build_index(BLOCKS[:3], name="facts2", embedder=minilm, root=index_root, show_progress=False)
    again = build_index(
        BLOCKS[:2], name="facts2", embedder="minilm", root=index_root, show_progress=False, replace=True
    )
    assert (summary.blocks, again.blocks) == (3, 2)


def test_build_rejects_duplicates_and_cleans_up_a_failed_build(tmp_path, minilm):
    with pytest.raises(DatasetError, match="occur more than once"):
        build_index([BLOCKS[0], BLOCKS[0]], name="dup", embedder=minilm, root=tmp_path, show_progress=False)

    class Failing:
        name, model_id, dim = "failing", "acme/failing", 384

        def encode(self, texts, **_):
            raise RetrievalError("embedding failed")

    with pytest.raises(RetrievalError, match="embedding failed"):
        build_index(BLOCKS, name="broken", embedder=Failing(), root=tmp_path, show_progress=False)
    assert list_indexes(tmp_path) == []


def test_demo_index_is_built_once_and_opened_by_the_registry(tmp_path, monkeypatch, minilm):
    corpus = tmp_path / "demo.jsonl"
    corpus.write_text("\n".join(json.dumps(b.model_dump()) for b in BLOCKS[:6]), encoding="utf-8")
    monkeypatch.setattr("claire.indexes.retriever.demo_corpus_path", lambda: corpus)
    root = tmp_path / "indexes"
    ensure_demo_index(root)
    created = list_indexes(root)[0].created_at
    ensure_demo_index(root)
    assert [(m.name, m.blocks, m.created_at) for m in list_indexes(root)] == [("demo", 6, created)]
    searcher = open_searcher("qdrant", index="demo", root=root)
    assert searcher.search("moons Phobos and Deimos", k=1)[0].block.id == "Mars-1"
    searcher.close()
    wikichat = open_searcher("wikichat", root=root, wikichat_url="http://127.0.0.1:9/search")
    with pytest.raises(RetrievalError, match="unknown search backend"):
        open_searcher("elastic", root=root)
    assert isinstance(wikichat, WikiChatRetriever)
    wikichat.close()


def test_repeated_queries_are_embedded_once(tmp_path):
    blocks = [Block(id=f"b{i}", document_title=f"T{i}", content=f"river bridge number {i}") for i in range(3)]
    build_index(blocks, name="q", embedder="minilm", root=tmp_path, show_progress=False)
    with open_retriever("q", root=tmp_path) as retriever:
        calls = []
        encoder = retriever.query_encoder

        class Counting:
            def encode(self, texts):
                calls.extend(texts)
                return encoder.encode(texts)

        retriever.query_encoder = Counting()
        first = retriever.search("bridge", k=2)
        second = retriever.search("bridge", k=2)
        retriever.search("river", k=2)
        assert calls == ["bridge", "river"]
        assert [h.block.id for h in first] == [h.block.id for h in second]


def test_replace_keeps_the_old_index_until_the_new_one_is_built(tmp_path, monkeypatch):
    old = [Block(id="old", document_title="Old", content="the old bridge text")]
    build_index(old, name="keep", embedder="minilm", root=tmp_path, show_progress=False)
    new = [Block(id=f"n{i}", document_title="New", content=f"new text {i}") for i in range(4)]

    def broken(*args, **kwargs):
        raise KeyboardInterrupt  # the rebuild is interrupted half-way

    from claire.indexes.store import IndexStore

    monkeypatch.setattr(IndexStore, "finalize", broken)
    with pytest.raises(KeyboardInterrupt):
        build_index(new, name="keep", embedder="minilm", root=tmp_path, show_progress=False, replace=True)
    monkeypatch.undo()
    with open_retriever("keep", root=tmp_path) as retriever:  # the old index is intact
        assert [h.block.id for h in retriever.search("bridge", k=1)] == ["old"]
    summary = build_index(new, name="keep", embedder="minilm", root=tmp_path, show_progress=False, replace=True)
    assert summary.name == "keep" and summary.blocks == 4
    assert [m.name for m in list_indexes(tmp_path)] == ["keep"]
    with open_retriever("keep", root=tmp_path) as retriever:
        assert retriever.meta.name == "keep" and retriever.store.count() == 4
