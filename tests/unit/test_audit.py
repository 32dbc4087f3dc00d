"""Benchmark audits in process: the FEVEROUS and AmbigQA loaders on small files in the published
formats (tests/fixtures/feverous_eiffel_dev.jsonl, ambigqa_dev_light.json) and on malformed ones,
and statements read from a model's answer (audits through the CLI are in
tests/integration/test_audit.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from claire.errors import DatasetError
from claire.studies.ambigqa import load_ambigqa, qa_pairs
from claire.tasks.feverous.dataset import load_feverous
from claire.studies.audit import evidence_page, first_page, parse_statement

FIXTURES = Path(__file__).parents[1] / "fixtures"
FEVEROUS_FILE, AMBIGQA_FILE = FIXTURES / "feverous_eiffel_dev.jsonl", FIXTURES / "ambigqa_dev_light.json"
FEVEROUS = [json.loads(line) for line in FEVEROUS_FILE.read_text(encoding="utf-8").splitlines()]  # a header line, then claims
HEADER = FEVEROUS[0]
AMBIGQA = json.loads(AMBIGQA_FILE.read_text(encoding="utf-8"))


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# -- loaders ------------------------------------------------------------------------------
def test_feverous_loader_reads_the_published_format():
    records = load_feverous(FEVEROUS_FILE)
    assert [r.id for r in records] == ["24435", "24436", "24437", "24438"]  # the empty header line is skipped
    first = records[0]
    assert first.label == "SUPPORTS" and first.challenge == "Numerical Reasoning"
    assert first.evidence == [["Eiffel Tower_sentence_0", "Eiffel Tower_cell_0_1_1"]]
    assert first_page(records[1].evidence) == "Gustave Eiffel" and first_page([[]]) == ""
    assert records[3].challenge is None and records[3].evidence == [[]]
    assert evidence_page("Paris, Texas_table_caption_0") == "Paris, Texas"
    assert evidence_page("Some_page_with_underscores_item_1_2") == "Some_page_with_underscores"
    assert evidence_page("Eiffel Tower_title") == "Eiffel Tower"


@pytest.mark.parametrize("line, message", [
    ('{"id": 1, "claim": "x y z", "label": "TRUE", "evidence": []}', r":2: field 'label'"),
    ('{"id": 1, "label": "SUPPORTS", "evidence": []}', r":2: field 'claim' is missing"),
    ('{"id": 1, "claim": "x", "label": "SUPPORTS", "evidence": [{"context": {}}]}', r":2: .*evidence.*content"),
    ('{"id": 1, "claim": "x", "label": "SUPPORTS", "evidence": [[3]]}', r":2: field 'evidence.0.0'"),
    ('{"id": 1, "claim": "x", "label": "SUPPORTS"', r":2: invalid JSON"),
    ('[1, 2]', r":2: expected a JSON object"),
])
def test_malformed_feverous_lines_name_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + line + "\n")
    with pytest.raises(DatasetError, match="bad.jsonl" + message):
        load_feverous(path)


def test_feverous_duplicate_ids_and_empty_files_are_errors(tmp_path):
    path = write_jsonl(tmp_path / "dup.jsonl", [FEVEROUS[1], FEVEROUS[1]])
    with pytest.raises(DatasetError, match=r"dup.jsonl:2: field .id. repeats .24435. \(first on line 1\)"):
        load_feverous(path)
    with pytest.raises(DatasetError, match="no FEVEROUS records"):
        load_feverous(write_jsonl(tmp_path / "empty.jsonl", [HEADER]))


def test_ambigqa_loader_reads_both_annotation_types():
    records = load_ambigqa(AMBIGQA_FILE)
    single, multiple = (qa_pairs(r) for r in records)
    assert [(q.item_id, q.answer, q.variants) for q in single] == [("-4469503464110108318", "1890", ["in 1890"])]
    assert [(q.item_id, q.question, q.answer) for q in multiple] == [
        ("7701#0", "Who designed the statue of liberty's copper shape?", "Frédéric Auguste Bartholdi"),
        ("7701#1", "Who designed the statue of liberty's iron framework?", "Gustave Eiffel"),
    ]


@pytest.mark.parametrize("data, message", [
    ({"id": "1"}, r"line 1 \(id 1\): field 'question' is missing"),  # one record a line (JSONL) is read too
    ([{"id": "1", "question": "q?", "annotations": [{"type": "singleAnswer", "answer": []}]}],
     r"record 0 \(id 1\): field 'annotations.0.singleAnswer.answer'"),
    ([{"id": "1", "question": "q?", "annotations": [{"type": "guess", "answer": ["a"]}]}], "record 0 .*annotations.0"),
    ([{"id": "1", "question": "q?", "annotations": [{"type": "multipleQAs", "qaPairs": []}]}], "qaPairs"),
    ([{"id": "1", "annotations": []}], "field 'question' is missing"),
    ([AMBIGQA[0], AMBIGQA[0]], r"record 1 .*duplicate id"),
])
def test_malformed_ambigqa_files_name_the_record_and_field(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=message):
        load_ambigqa(path)
    path.write_text('[{"id": "1",')
    with pytest.raises(DatasetError, match=r"not valid JSON \(line 1"):
        load_ambigqa(path)
    with pytest.raises(DatasetError, match="not a regular file"):  # read as every data file is: never a device
        load_ambigqa(Path("/dev/zero"))


def test_statements_are_read_from_tags_or_a_lone_line():
    assert parse_statement("Sure.\n<statement>The tower was finished in 1889.</statement>") == "The tower was finished in 1889."
    assert parse_statement("The tower was finished in 1889.") == "The tower was finished in 1889."
    assert parse_statement("Well,\nI am not sure.") is None and parse_statement("") is None


# -- selections ---------------------------------------------------------------------------
def test_a_random_sample_is_reproducible_kept_in_order_and_never_mixed_with_limit(tmp_path):
    from claire.errors import ConfigError
    from claire.studies.audit import Selection, run_audit

    items = list(range(100))
    drawn = Selection(sample=10, seed=3)(items)
    assert drawn == Selection(sample=10, seed=3)(items) and drawn == sorted(drawn) and len(set(drawn)) == 10
    assert drawn != Selection(sample=10, seed=4)(items) and drawn != items[:10]
    assert Selection(limit=5)(items) == items[:5] and Selection()(items) == items
    assert Selection(sample=500)(items) == items  # a sample as large as the data is all of it
    # the paper's rule: Cochran's size for the confidence and margin, corrected for the population
    rule = Selection(margin=0.1, confidence=0.95, seed=3)
    assert rule.size(100) == 50 and len(rule(items)) == 50 and rule(items) == sorted(rule(items))
    with pytest.raises(ConfigError, match="--margin draws Cochran's sample size"):
        asyncio.run(run_audit(dataset=tmp_path / "x.json", fmt="wikicollide", config=None, out_dir=tmp_path / "o",
                              sample=3, margin=0.05))
    with pytest.raises(ConfigError, match="cannot be combined"):
        asyncio.run(run_audit(dataset=tmp_path / "x.json", fmt="wikicollide", config=None, out_dir=tmp_path / "o",
                              limit=3, sample=3))
