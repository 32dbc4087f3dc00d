"""File inputs: regular files only, read up to a stated limit."""

from __future__ import annotations




import pytest


# -- file inputs: regular files only, read up to a stated limit ----------------------------------

def test_a_passage_file_that_is_a_device_or_a_pipe_is_refused_at_once(tmp_path):
    import os

    from claire.cli.options import check_writable, passage_text
    from claire.errors import ConfigError

    with pytest.raises(ConfigError, match="not a regular file"):
        passage_text(None, __import__("pathlib").Path("/dev/zero"))  # read without bound before
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        passage_text(None, fifo)  # hung before: nobody writes to it
    with pytest.raises(ConfigError, match="--trace-out: .* not a regular file"):
        check_writable(fifo, "--trace-out")  # hung after the check before, so --json never printed
    check_writable(__import__("pathlib").Path("/dev/null"), "--trace-out")  # a device that takes anything is fine
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(2_000_000)
    with pytest.raises(ConfigError, match="over the 1 MB"):
        passage_text(None, big)


def test_a_record_file_nested_too_deeply_or_too_large_is_one_clear_error(tmp_path):
    from claire.agent.prompt_preview import record_sample
    from claire.errors import ConfigError, DatasetError
    from claire.files import MAX_RECORDS_BYTES, json_records

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="--record"):
        record_sample(f"{deep}:1")  # RecursionError, reported as an internal error, before
    with pytest.raises(DatasetError, match="nested too deeply"):
        json_records(deep, what="dataset", hint="records")
    lines = tmp_path / "deep.jsonl"
    lines.write_text("{}\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(DatasetError, match="deep.jsonl:2: JSON nested too deeply"):
        json_records(lines, what="dataset", hint="records")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:
        file.truncate(MAX_RECORDS_BYTES + 1)
    with pytest.raises(DatasetError, match="over the 268.435 MB limit"):
        json_records(huge, what="dataset", hint="records")  # refused at once, never read


def test_a_cited_source_that_is_a_device_is_refused(tmp_path):
    from claire.errors import DatasetError
    from claire.ingestion.web_docs import read_source_text

    with pytest.raises(DatasetError, match="not a regular file"):
        read_source_text("/dev/zero")


def test_an_atomic_write_takes_a_temporary_name_of_its_own(tmp_path):
    import threading

    from claire.files import write_atomically

    target = tmp_path / "snapshot.json"
    (tmp_path / ".snapshot.json.tmp").mkdir()  # another writer's fixed temporary name, in the way
    write_atomically(target, "first")
    assert target.read_text() == "first"
    writers = [threading.Thread(target=write_atomically, args=(target, f"writer {n} " * 20_000)) for n in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    text = target.read_text()
    assert text.startswith("writer ") and len(set(text.split())) == 2  # one writer's whole text, never a mix
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p.is_file()] == []
