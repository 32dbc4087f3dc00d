"""Corpus and dataset lines as they are read: an oversize block is split at boundaries (a table's
parts keep its header), and a line that is not UTF-8 or holds half a surrogate pair is named and
can be skipped."""

from __future__ import annotations

import json

import pytest

from claire.errors import DatasetError
from claire.indexes.corpus import MAX_BLOCK_CHARS, read_corpus, split_oversize
from claire.domain import Block
from claire.files import is_text
from claire.tasks.wikicollide.dataset import load_records


def test_oversize_text_block_is_split_at_boundaries():
    paragraph = "The tower is tall. " * 200  # ~3,800 characters
    block = Block(id="big", document_title="T", content="\n\n".join([paragraph] * 20))
    parts = split_oversize(block)
    assert len(parts) > 1 and all(len(p.content) <= MAX_BLOCK_CHARS for p in parts)
    assert [p.id for p in parts[:2]] == ["big", "big~2"] and len({p.id for p in parts}) == len(parts)
    assert "".join(p.content for p in parts).replace("\n", "").replace(" ", "") == block.content.replace("\n", "").replace(" ", "")


def test_oversize_table_parts_keep_the_header():
    rows = [f"| row {i} | {'x' * 80} |" for i in range(400)]
    block = Block(id="t", document_title="T", block_type="table", content="\n".join(["| name | value |", "| --- | --- |", *rows]))
    parts = split_oversize(block)
    assert len(parts) > 1
    for part in parts:
        assert part.content.startswith("| name | value |\n| --- | --- |") and len(part.content) <= MAX_BLOCK_CHARS
    assert sum(p.content.count("| row ") for p in parts) == 400


def test_non_utf8_corpus_line_is_named_and_skippable(tmp_path):
    corpus = tmp_path / "c.jsonl"
    good = json.dumps({"id": "a", "document_title": "A", "content": "fine"}).encode()
    corpus.write_bytes(good + b"\n" + b'{"id": "b", "document_title": "B", "content": "caf\xe9"}\n' + good.replace(b'"a"', b'"c"') + b"\n")
    with pytest.raises(DatasetError, match=r"c\.jsonl:2: not UTF-8"):
        read_corpus(corpus)
    loaded = read_corpus(corpus, skip_invalid=True)
    assert [b.id for b in loaded.blocks] == ["a", "c"] and loaded.invalid == 1


def test_a_lone_surrogate_is_a_named_bad_line(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "document_title": "A", "content": "fine"}\n'
                      '{"id": "b", "document_title": "B", "content": "half \\ud800 a pair"}\n'
                      '{"id": "c", "document_title": "C", "content": "a whole pair \\ud83d\\ude00"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"c\.jsonl:2: .*lone surrogate"):
        read_corpus(corpus)
    loaded = read_corpus(corpus, skip_invalid=True)
    assert [b.id for b in loaded.blocks] == ["a", "c"] and loaded.invalid == 1
    dataset = tmp_path / "d.json"
    dataset.write_text('[{"claim_id": "1", "claim": "x \\udc00"}]', encoding="utf-8")
    with pytest.raises(DatasetError, match="record 0: .*lone surrogate"):
        load_records(dataset)
    assert is_text({"k": ["fine", "😀"]}) and not is_text({"k": ["\udc80"]})
