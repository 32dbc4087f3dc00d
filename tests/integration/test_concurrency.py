"""One embedded index, many processes: `claire` subprocesses searching it while another runs an
eval, a `--replace` build swapping in a new version under running searches, and a writer killed
with SIGKILL mid-build — all on real on-disk indexes with MiniLM."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from claire.errors import RetrievalError
from claire.domain import Block
from claire.indexes.retriever import build_index, open_retriever
from claire.indexes.sharing import VERSION_PREFIX, VIEWS, WriterLock
from claire.indexes.catalog import list_indexes
from claire.testing.cli import start_claire
from claire.testing.doubles import http_responder
from claire.testing.mock_openai import MockOpenAIServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"
OLD = [Block(id=f"old-{i}", document_title=f"Old {i}", content=f"the old wooden bridge number {i} over the canal")
       for i in range(3)]


def new_blocks(n: int) -> list[Block]:
    return [Block(id=f"new-{i}", document_title=f"New {i}", content=f"a new steel bridge, span {i}, over the canal")
            for i in range(n)]


def finish(process: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def write_corpus(path: Path, blocks: list[Block]) -> Path:
    path.write_text("".join(b.model_dump_json(exclude_none=True) + "\n" for b in blocks), encoding="utf-8")
    return path


def versions(index_dir: Path) -> list[str]:
    return sorted(p.name for p in index_dir.iterdir() if p.name.startswith(VERSION_PREFIX))


def top_id(root: Path, name: str) -> str:
    with open_retriever(name, root=root) as retriever:
        return retriever.search("bridge over the canal", k=1)[0].block.id


def test_two_searches_run_while_an_eval_uses_the_same_index(tmp_path):
    cache = tmp_path / "cache"
    root = cache / "indexes"  # the default index folder of processes run with this cache
    shared = [Block(id="eiffel", document_title="Eiffel Tower", content="The Eiffel Tower was completed in 1889."),
              Block(id="apollo", document_title="Apollo 11", content="Apollo 11 landed on the Moon in July 1969."),
              Block(id="armstrong", document_title="Neil Armstrong", content="Armstrong flew the lunar module Eagle."),
              *OLD]
    build_index(shared, name="shared", embedder="minilm", root=root, show_progress=False)
    with MockOpenAIServer(http_responder()) as server, open_retriever("shared", root=root) as held:
        # this process keeps the index open throughout: before versions, every other open failed
        processes = [
            start_claire("eval", "--index", "demo", "--dataset", str(FIXTURE), "--out", str(tmp_path / "run"), "--ids", "demo_1,demo_2",
                         "--index", "shared", "--base-url", server.base_url, "--no-rerank", "--no-cache", cache=cache,
                         env={"OPENAI_API_KEY": "sk-test"}),
            start_claire("search", "Eiffel Tower completion", "-k", "3", "--json", "--index", "shared", cache=cache),
            start_claire("search", "Apollo 11 lunar module", "-k", "3", "--json", "--index", "shared",
                         "--exclude-title", "Apollo 11", cache=cache),
        ]
        results = [finish(p) for p in processes]
        assert held.search("Eiffel Tower", k=1)[0].block.id == "eiffel"
    (eval_rc, _, eval_err), (s1_rc, s1_out, s1_err), (s2_rc, s2_out, s2_err) = results
    assert eval_rc == 0, eval_err
    assert s1_rc == 0 and s2_rc == 0, s1_err + s2_err
    assert json.loads(s1_out)[0]["id"] == "eiffel"
    found = json.loads(s2_out)
    assert len(found) == 3 and all(hit["document_title"] != "Apollo 11" for hit in found)
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["error"] is None for row in rows)
    assert all(set(row["evidence_ids"]) <= {b.id for b in shared} and row["evidence_ids"] for row in rows)
    assert not (root / "shared" / VIEWS).exists()  # every reader removed its view


def test_replace_while_searching_shows_the_old_index_until_the_swap(tmp_path):
    root = tmp_path / "indexes"
    build_index(OLD, name="swap", embedder="minilm", root=root, show_progress=False)
    corpus = write_corpus(tmp_path / "new.jsonl", new_blocks(120))
    long_lived = open_retriever("swap", root=root)  # e.g. a running `claire serve`
    builder = start_claire("index", "build", str(corpus), "--name", "swap", "--replace", "--path", str(root), cache=tmp_path)
    seen = []
    while builder.poll() is None:
        seen.append(top_id(root, "swap"))  # a fresh open each time, as a new process would
        time.sleep(0.05)
    rc, out, err = finish(builder)
    assert rc == 0, err
    assert "built index swap: 120 blocks" in out
    seen.append(top_id(root, "swap"))
    kinds = [block_id.split("-")[0] for block_id in seen]
    assert kinds[0] == "old" and kinds[-1] == "new"
    assert kinds == sorted(kinds, key=lambda kind: kind == "new")  # old, old, ..., new, new: one swap, no flicker
    # the process that opened the old version keeps answering from it until it reopens
    assert long_lived.search("bridge over the canal", k=1)[0].block.id.startswith("old-")
    assert long_lived.store.count() == 3
    assert long_lived.refresh() and not long_lived.refresh()  # a server moves to the new version when it asks
    assert long_lived.search("bridge over the canal", k=1)[0].block.id.startswith("new-")
    long_lived.close()
    assert [(m.name, m.blocks) for m in list_indexes(root)] == [("swap", 120)]
    assert len(versions(root / "swap")) == 1  # the old version is gone once nobody needs it


def test_writer_killed_mid_build_leaves_readers_working(tmp_path):
    root = tmp_path / "indexes"
    build_index(OLD, name="kill", embedder="minilm", root=root, show_progress=False)
    current = versions(root / "kill")
    corpus = write_corpus(tmp_path / "big.jsonl", new_blocks(4000))
    reader = open_retriever("kill", root=root)
    builder = start_claire("index", "build", str(corpus), "--name", "kill", "--replace", "--path", str(root), cache=tmp_path)
    deadline = time.monotonic() + 180
    while len(versions(root / "kill")) < 2:  # wait until the new version is being written
        assert builder.poll() is None, builder.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    new_version = root / "kill" / next(v for v in versions(root / "kill") if v not in current)
    while not any(f.is_file() and f.stat().st_size for f in new_version.rglob("*")):  # wait for its first bytes
        assert builder.poll() is None, builder.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    builder.send_signal(signal.SIGKILL)
    builder.communicate(timeout=60)
    assert builder.returncode == -signal.SIGKILL
    assert reader.search("bridge over the canal", k=1)[0].block.id.startswith("old-")  # open before the kill
    assert top_id(root, "kill").startswith("old-")  # opened after it
    reader.close()
    assert [(m.name, m.blocks, m.complete) for m in list_indexes(root)] == [("kill", 3, True)]
    # the next build does not wait for the dead writer and clears its half-written version
    build_index(new_blocks(5), name="kill", embedder="minilm", root=root, show_progress=False, replace=True,
                lock_timeout=5)
    assert top_id(root, "kill").startswith("new-")
    assert len(versions(root / "kill")) == 1 and versions(root / "kill") != current


def test_a_second_writer_waits_with_a_message_then_times_out(tmp_path, caplog):
    root = tmp_path / "indexes"
    build_index(OLD, name="busy", embedder="minilm", root=root, show_progress=False)
    with WriterLock(root / "busy", "busy"):
        with caplog.at_level("WARNING"), pytest.raises(RetrievalError, match="still being built .* after waiting 0.5 s"):
            build_index(new_blocks(2), name="busy", embedder="minilm", root=root, show_progress=False, replace=True,
                        lock_timeout=0.5)
        assert "being built or changed by another process" in caplog.text and "waiting up to 0.5 s" in caplog.text
        assert top_id(root, "busy").startswith("old-")  # reading never waits for a writer
    build_index(new_blocks(2), name="busy", embedder="minilm", root=root, show_progress=False, replace=True,
                lock_timeout=0.5)
    assert top_id(root, "busy").startswith("new-")
