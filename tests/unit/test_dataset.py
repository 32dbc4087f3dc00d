"""The WikiCollide loader: the published format and JSONL, clear errors, nothing half-loaded."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from claire.errors import DatasetError
from claire.tasks.wikicollide.dataset import infer_split, load_records, load_wikicollide

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wikicollide_mini.json"


def records() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def write(path: Path, data: list[dict]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_fixture_loads_into_claims():
    claims = load_wikicollide(FIXTURE)
    assert len(claims) == 10
    first = claims[0]
    assert first.claim_id == "demo_1"
    assert first.text.startswith("During the Apollo 11 landing")
    assert first.context.document_title == "Neil Armstrong"
    assert first.context.section_title == "NASA career > Apollo 11"
    assert first.context.url == "https://en.wikipedia.org/wiki/Neil_Armstrong"
    assert first.label == "inconsistent" and first.inconsistency_type == "NamedEntityDiscrepancy"
    consistent = [c for c in claims if c.label == "consistent"]
    assert len(consistent) == 5 and all(c.inconsistency_type is None for c in consistent)


def test_records_keep_the_gold_trace():
    first = load_records(FIXTURE)[0]
    assert first.agent_trace and first.agent_trace[0].action_name == "search_wikipedia_outside_claim_article"
    assert first.label_reasoning


def test_jsonl_reads_the_same(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records()) + "\n\n", encoding="utf-8")
    assert load_wikicollide(path) == load_wikicollide(FIXTURE)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r[2]["claim"].pop("claim_text"), ["record 2", "claim_id demo_3", "field claim.claim_text: missing"]),
        (lambda r: r[4].update(label="maybe"), ["record 4", "claim_id demo_5", "field label"]),
        (lambda r: r[1]["claim"]["claim_context_block"].update(content="  "),
         ["record 1", "claim_id demo_2", "field claim.claim_context_block: content must not be empty"]),
        (lambda r: r[3].update(agent_trace="none"), ["record 3", "claim_id demo_4", "field agent_trace"]),
        (lambda r: r[6]["claim"].update(claim_id="demo_2"),
         ["record 6", "claim_id demo_2", "field claim.claim_id: duplicate of record 1"]),
        (lambda r: r.__setitem__(5, "not a record"), ["record 5", "expected a JSON object"]),
    ],
)
def test_bad_records_name_file_record_and_field(tmp_path, mutate, expected):
    data = copy.deepcopy(records())
    mutate(data)
    path = write(tmp_path / "bad.json", data)
    with pytest.raises(DatasetError) as caught:
        load_wikicollide(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    for part in expected:
        assert part in message


def test_bad_files(tmp_path):
    (tmp_path / "broken.json").write_text('[{"claim": ', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"broken\.json: not valid JSON \(line 1"):
        load_wikicollide(tmp_path / "broken.json")
    (tmp_path / "bad.jsonl").write_text(json.dumps(records()[0]) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2: invalid JSON"):
        load_wikicollide(tmp_path / "bad.jsonl")
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match="no records"):
        load_wikicollide(tmp_path / "empty.json")
    with pytest.raises(DatasetError, match="not found"):
        load_wikicollide(tmp_path / "missing.json")


def test_optional_keys_may_be_absent(tmp_path):
    data = records()
    for record in data:
        record.pop("inconsistency_type", None)
        record.pop("agent_trace")
        record.pop("label_reasoning")
        record["claim"]["claim_context_block"].pop("url")
        record["claim"]["claim_context_block"]["section_title"] = None
    loaded = load_records(write(tmp_path / "lean.json", data))
    assert len(loaded) == 10 and loaded[0].agent_trace == [] and loaded[0].claim.claim_context_block.section_title == ""


@pytest.mark.parametrize(
    ("name", "split"),
    [("dev.json", "validation"), ("wikicollide-val.jsonl", "validation"), ("dev-sample.json", "validation"),
     ("test.json", "test"), ("my_test_set.json", "test"), ("wikicollide_mini.json", None), ("latest.json", None)],
)
def test_infer_split(name, split):
    assert infer_split(Path("/data") / name) == split


def test_shared_sample(shared_sample):
    loaded = load_records(shared_sample)
    assert len(loaded) == 11
    assert sum(r.label == "inconsistent" for r in loaded) == 6
    assert all(r.agent_trace for r in loaded)
    assert infer_split(shared_sample) == "validation"
