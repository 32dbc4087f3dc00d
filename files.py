"""Reading and writing CLAIRE's own files: JSON Lines read with one rule for every reader (a last
line without its newline that does not parse is a write cut short — *torn* — and left out), lines
appended durably (a torn last line is cut away first, then one ``write`` and ``fsync``), and
files replaced atomically so a reader never sees half of one. A leaf module, like ``errors``.
"""

from __future__ import annotations

import json
import contextlib
import os
import tempfile
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from claire.errors import DatasetError


@dataclass
class JsonLine:
    """One non-blank line of a JSONL file: its value, or the problem that kept it from being read."""

    number: int  # 1-based
    raw: bytes
    value: Any = None
    problem: str | None = None
    unterminated: bool = False  # the last line of a file that does not end in a newline

    @property
    def ok(self) -> bool:
        """Whether the line was read."""
        return self.problem is None

    @property
    def torn(self) -> bool:
        """An unreadable last line without its newline: a write cut short."""
        return self.unterminated and not self.ok


MAX_RECORDS_BYTES = 256 * 1024 * 1024
"""The largest dataset file (one JSON array or JSONL of records) read whole: a benchmark split is
tens of megabytes."""


def read_bytes(path: Path, *, what: str, hint: str = "a file", limit: int | None = None) -> bytes:
    """A regular file's bytes (at most ``limit`` of them); a DatasetError naming it when it is
    missing, a folder, not a regular file (a FIFO or a device such as /dev/zero, which could block or
    never end), larger than ``limit`` or unreadable."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise DatasetError(f"{path} is not a regular file (a pipe or a device); give {hint}")
        if limit is not None and info.st_size > limit:
            raise DatasetError(f"{what} file {path} is {info.st_size / 1e6:.3g} MB, over the {limit / 1e6:g} MB limit "
                               f"for a {what} file; give {hint}")
        with path.open("rb") as file:
            data = file.read(limit + 1 if limit is not None else -1)
        if limit is not None and len(data) > limit:  # it grew while being read
            raise DatasetError(f"{what} file {path} is over the {limit / 1e6:g} MB limit for a {what} file; give {hint}")
        return data
    except FileNotFoundError:
        raise DatasetError(f"{what} file {path} not found") from None
    except IsADirectoryError:
        raise DatasetError(f"{path} is a folder; give {hint}") from None
    except OSError as error:
        raise DatasetError(f"cannot read {what} file {path}: {error.strerror or error}") from None


LONE_SURROGATE = "a \\uD800-\\uDFFF escape without its pair (a lone surrogate), which is not text"
TOO_DEEP = "JSON nested too deeply to be a record"


def is_text(value: Any) -> bool:
    """Whether every string in a JSON value is real Unicode text (JSON's ``\\uD83D`` escapes can
    leave half a surrogate pair, which nothing downstream can encode)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(is_text(key) and is_text(item) for key, item in value.items())
    if isinstance(value, list):
        return all(is_text(item) for item in value)
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python string, only half a pair can be one


def valid_text(value: Any) -> Any:
    """``value`` with every string made valid Unicode (half a surrogate pair becomes U+FFFD),
    recursively through lists and dicts; anything else as it is."""
    if isinstance(value, str):
        return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {valid_text(k): valid_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_text(v) for v in value]
    return value


def json_lines(data: bytes) -> Iterator[JsonLine]:
    """Every non-blank line of JSONL ``data``, read as UTF-8 JSON (a byte-order mark and CR line
    ends are allowed); an unreadable line says why in ``problem``."""
    lines = data.split(b"\n")
    last = len(lines) if data and not data.endswith(b"\n") else 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        unterminated = number == last
        try:
            text = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as error:
            yield JsonLine(number, raw, problem=f"not UTF-8 text (byte {error.start + 1} of the line); save the file as UTF-8",
                           unterminated=unterminated)
            continue
        try:
            value = json.loads(text.removeprefix("\ufeff") if number == 1 else text)
        except json.JSONDecodeError as error:
            yield JsonLine(number, raw, problem=f"invalid JSON ({error.msg})", unterminated=unterminated)
            continue
        except RecursionError:
            yield JsonLine(number, raw, problem=TOO_DEEP, unterminated=unterminated)
            continue
        if b"\\u" in raw and not is_text(value):
            yield JsonLine(number, raw, problem=LONE_SURROGATE, unterminated=unterminated)
            continue
        yield JsonLine(number, raw, value, unterminated=unterminated)


def read_jsonl(path: Path, *, what: str, hint: str = "a JSONL file") -> Iterator[JsonLine]:
    """:func:`json_lines` of a file (a DatasetError naming it when it cannot be read at all)."""
    return json_lines(read_bytes(path, what=what, hint=hint))


def read_log(path: Path) -> list[Any]:
    """The values of a JSONL file CLAIRE appends to (a run's claims, reviews...): a missing file
    holds nothing, a torn last line is left out (its work is simply redone), and any other bad
    line is a DatasetError naming FILE:LINE."""
    if not path.exists():
        return []
    values = []
    for line in read_jsonl(path, what="run"):
        if line.ok:
            values.append(line.value)
        elif not line.torn:
            raise DatasetError(f"{path}:{line.number}: {line.problem}; delete the line or the run directory")
    return values


def append_line(path: Path, line: bytes) -> None:
    """Append one complete line durably; a torn last line left by a kill is cut away first."""
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.fstat(descriptor).st_size:
            data = path.read_bytes()
            if not data.endswith(b"\n"):
                os.ftruncate(descriptor, data.rfind(b"\n") + 1)
        view = memoryview(line)
        while view:
            view = view[os.write(descriptor, view):]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def strict_json(value: Any, *, indent: int | None = None, default: Any = None, sort_keys: bool = False) -> str:
    """JSON as every reader accepts it, the one way CLAIRE writes JSON: a NaN or an infinity (which
    JSON has no word for) is written as null, never as ``NaN``."""
    return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, indent=indent, default=default,
                      sort_keys=sort_keys)


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON value as a line, durably."""
    append_line(path, (strict_json(record) + "\n").encode("utf-8"))


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader never sees half a file."""
    # a temporary name of this writer's own, so concurrent writers never share (or remove) one
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            temp.write(text)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """Replace ``path`` with one JSON value a line, atomically."""
    write_atomically(path, "".join(strict_json(record) + "\n" for record in records))


@dataclass
class JsonRecord:
    """One record of a data file: its place (``where``: ``record 3`` or ``line 4``) and its value."""

    where: str
    value: Any
    line: int | None = None  # the line number, for JSONL files


def json_records(path: Path, *, what: str, hint: str) -> list[JsonRecord]:
    """The records of a data file that is either one JSON array or JSONL (one record a line, as
    :func:`json_lines` reads it). Any unreadable part is a DatasetError naming the file, the line
    and what the file should hold (``hint``)."""
    data = read_bytes(path, what=what, hint=hint, limit=MAX_RECORDS_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DatasetError(f"cannot read {what} file {path}: not UTF-8 text (byte {error.start + 1}); save it as UTF-8") from None
    if text.lstrip().startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise DatasetError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
        except RecursionError:
            raise DatasetError(f"{path}: {TOO_DEEP}; {hint}") from None
        for index, value in enumerate(values):
            if not is_text(value):
                raise DatasetError(f"{path}: record {index}: {LONE_SURROGATE}; {hint}")
        return [JsonRecord(f"record {index}", value) for index, value in enumerate(values)]
    records = []
    for line in json_lines(data):
        if not line.ok:
            raise DatasetError(f"{path}:{line.number}: {line.problem}; {hint}")
        records.append(JsonRecord(f"line {line.number}", line.value, line.number))
    return records
