"""Corpus blocks: JSONL validation and the WikiCollide and plain-article converters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claire.errors import ConfigError, DatasetError
from claire.indexes.corpus import block_id, blocks_from_article, blocks_from_wikicollide, read_corpus, wikicollide_claims
from claire.domain import Block


GOOD = {"id": "a1", "document_title": "Alpha", "section_title": "History", "content": "Alpha was founded in 1901."}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_embed_text_with_and_without_section():
    block = Block(**GOOD)
    assert block.embed_text() == "Alpha > History\nAlpha was founded in 1901."
    assert Block(id="x", document_title="Alpha", content="Text.").embed_text() == "Alpha\nText."
    assert Block(id="x", document_title="Alpha", section_title=None, content="Text.").section_title == ""


def test_read_corpus_reads_valid_lines_and_ignores_blank_ones(tmp_path):
    second = {**GOOD, "id": "a2", "block_type": "table", "url": "https://x.org/Alpha"}
    path = write_lines(tmp_path / "c.jsonl", [json.dumps(GOOD), "", "   ", json.dumps(second)])
    load = read_corpus(path)
    assert [b.id for b in load.blocks] == ["a1", "a2"]
    assert load.blocks[1].block_type == "table" and load.invalid == 0 and load.errors == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "content"}), "field content: missing"),
        (json.dumps({**GOOD, "content": "   "}), "field content: must not be empty"),
        (json.dumps({**GOOD, "block_type": "list"}), "field block_type:"),
        (json.dumps(GOOD), "duplicate id 'a1' (first on line 1)"),
    ],
)
def test_read_corpus_names_file_and_line_of_a_bad_line(tmp_path, line, problem):
    path = write_lines(tmp_path / "c.jsonl", [json.dumps(GOOD), line])
    with pytest.raises(DatasetError) as info:
        read_corpus(path)
    assert str(info.value).startswith(f"{path}:2: ")
    assert problem in str(info.value)


def test_read_corpus_skip_invalid_counts_and_lists_problems(tmp_path):
    path = write_lines(
        tmp_path / "c.jsonl", [json.dumps(GOOD), "oops", json.dumps(GOOD), json.dumps({**GOOD, "id": "a3"})]
    )
    load = read_corpus(path, skip_invalid=True)
    assert [b.id for b in load.blocks] == ["a1", "a3"]
    assert load.invalid == 2
    assert load.errors[0].startswith(f"{path}:2:") and "duplicate id" in load.errors[1]


def test_read_corpus_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        read_corpus(tmp_path / "nope.jsonl")


# --- WikiCollide ---------------------------------------------------------------------------

TABLE = "| Year | Winner |\n| --- | --- |\n| 2010 | Band A |"


def passage(title: str, section: str, content: str) -> dict:
    return {
        "document_title": title,
        "section_title": section,
        "content": content,
        "url": None,
        "last_edit_date": "2024-01-01",
    }


def record(claim_id: str, title: str, searches: list[list[dict]]) -> dict:
    trace = [{"action_name": "clarify_entity", "action_argument": "x", "action_output": "some text"}]
    trace += [
        {"action_name": "search_wikipedia_outside_claim_article", "action_argument": "q", "action_output": out}
        for out in searches
    ]
    return {
        "claim": {
            "claim_id": claim_id,
            "claim_text": f"A claim about {title}.",
            "claim_context_block": passage(title, "Intro", f"{title} is a thing."),
        },
        "label": "consistent",
        "agent_trace": trace,
    }


def test_blocks_from_wikicollide_dedupes_and_detects_tables(tmp_path):
    shared = passage("Awards", "Winners", TABLE)
    records = [
        record("c1", "Band A", [[shared, passage("Band B", "", "Band B plays rock.")], [shared]]),
        record("c2", "Band C", [[shared]]),
    ]
    path = tmp_path / "wc.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    blocks = blocks_from_wikicollide(path)
    assert [b.document_title for b in blocks] == ["Band A", "Awards", "Band B", "Band C"]
    table = blocks[1]
    assert table.block_type == "table" and blocks[2].block_type == "text"
    assert table.id == block_id("Awards", "Winners", TABLE) and len(table.id) == 16
    claims = wikicollide_claims(path)
    assert [len(c.found) for c in claims] == [3, 1]
    assert claims[0].context.document_title == "Band A"


def test_blocks_from_wikicollide_names_record_and_field(tmp_path):
    bad = record("c1", "Band A", [[{"document_title": "X", "section_title": ""}]])
    path = tmp_path / "wc.json"
    path.write_text(json.dumps([record("c0", "Band Z", []), bad]), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        blocks_from_wikicollide(path)
    message = str(info.value)
    assert str(path) in message and "record 1" in message and "agent_trace[1].action_output[0].content" in message


def test_blocks_from_wikicollide_rejects_non_array(tmp_path):
    path = tmp_path / "wc.json"
    path.write_text('{"claim": 1}', encoding="utf-8")
    with pytest.raises(DatasetError, match="JSON array"):
        blocks_from_wikicollide(path)


def test_blocks_from_wikicollide_on_shared_sample(shared_sample):
    blocks = blocks_from_wikicollide(shared_sample)
    corpus = shared_sample.with_name("dev-sample-corpus.jsonl")
    assert len(blocks) == 248
    assert {b.id for b in blocks} == {json.loads(line)["id"] for line in corpus.read_text().splitlines()}
    assert any(b.block_type == "table" for b in blocks)


# --- plain articles --------------------------------------------------------------------------

ARTICLE = """# Alpha Town

Alpha Town is a small town. It lies on a river.

== History ==
Founded in 1901 by settlers.

Grew quickly after the railway came.

## Economy

### Farming
Farms grow wheat.

| Crop | Tonnes |
| --- | --- |
| Wheat | 100 |
| Barley | 50 |

After the table comes more text.
"""


def test_blocks_from_article_sections_tables_and_urls():
    blocks = blocks_from_article("Alpha Town", ARTICLE, url="https://en.wikipedia.org/wiki/Alpha_Town")
    sections = [(b.section_title, b.block_type) for b in blocks]
    assert sections == [
        ("", "text"),
        ("History", "text"),
        ("Economy > Farming", "text"),
        ("Economy > Farming", "table"),
        ("Economy > Farming", "text"),
    ]
    assert blocks[1].content == "Founded in 1901 by settlers.\nGrew quickly after the railway came."
    assert blocks[3].content.startswith("| Crop | Tonnes |") and blocks[3].content.endswith("| Barley | 50 |")
    assert blocks[0].url == "https://en.wikipedia.org/wiki/Alpha_Town"
    assert blocks[2].url == "https://en.wikipedia.org/wiki/Alpha_Town#Farming"


def test_blocks_from_article_bounds_length_and_keeps_tables_whole():
    sentences = [f"Fox number {i} jumps over the lazy dog near the old mill." for i in range(30)]  # 12 words
    long_paragraph = " ".join(sentences)
    table = "\n".join(["| a | b |", "| --- | --- |"] + [f"| {i} | {'word ' * 10}|" for i in range(40)])
    blocks = blocks_from_article("Fox", f"{long_paragraph}\n\n{table}", max_words=60)
    text_blocks = [b for b in blocks if b.block_type == "text"]
    assert len(text_blocks) == 6  # 30 sentences of 12 words, five to a block
    assert all(len(b.content.split()) <= 60 for b in text_blocks)
    assert all(b.content.endswith("mill.") for b in text_blocks)  # split at sentence ends
    assert " ".join(b.content for b in text_blocks) == long_paragraph
    tables = [b for b in blocks if b.block_type == "table"]
    assert len(tables) == 1 and tables[0].content == table


def test_blocks_from_article_rejects_bad_arguments():
    with pytest.raises(DatasetError):
        blocks_from_article("  ", "text")
    with pytest.raises(ConfigError):
        blocks_from_article("T", "text", max_words=0)
    assert blocks_from_article("T", "\n\n") == []
