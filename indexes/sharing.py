"""Many readers and one writer on an embedded index folder, across processes.

The embedded engine lets one process open a shard's files at a time and rewrites some of them
when it opens and closes them, so processes never share an open shard. Instead an index folder
``<root>/<name>/`` holds immutable *versions* and a pointer to the current one::

    meta.json            the index description plus "version": the current version's folder;
                         replaced atomically, so it always names a complete version
    .v-<stamp>-<hex>/    one complete build (shard/ and its meta.json), never changed once named
    .views/<pid>-<hex>/  one reading process's private view of a version: hard links to its
                         files (a copy for the write-ahead log of older indexes), locked while open
    .writer.lock         held by the one process building, replacing or deleting the index

Every hidden name starts with a dot, which index names may not, and lives inside the index's own
folder, so none can collide with another index. A reader links the version named by the pointer
into its view and opens the view: a writer can build a new version beside it, swap the pointer
and delete the old version while readers keep searching theirs (the links keep the data alive).
A writer killed mid-build leaves only an unnamed version folder, removed by the next writer.
Folders written before versions existed (``shard/`` beside ``meta.json``) are read the same way.
Locks are ``flock`` locks, released by the system when their process dies.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claire.errors import RetrievalError

POINTER = "meta.json"
VERSION_PREFIX = ".v-"
VIEWS = ".views"
WRITER_LOCK = ".writer.lock"
LEGACY_SHARD = "shard"
DEFAULT_LOCK_TIMEOUT = 600.0
STALE_AFTER_S = 60.0  # an unlocked view younger than this may still be being set up
_POLL_S = 0.2
_ATTEMPTS = 5

log = logging.getLogger(__name__)


def read_pointer(index_dir: Path) -> dict[str, Any] | None:
    """The current description of the index in ``index_dir`` (None when it has none)."""
    path = index_dir / POINTER
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise RetrievalError(f"cannot read {path} ({exc}); delete the index and rebuild it") from None
    if not isinstance(data, dict):
        raise RetrievalError(f"{path} does not describe a CLAIRE index; delete and rebuild it")
    return data


def shard_dir(index_dir: Path, pointer: dict[str, Any]) -> Path:
    """The shard folder of the version ``pointer`` names (older folders keep theirs at ``shard/``)."""
    version = pointer.get("version")
    if version is None:
        return index_dir / LEGACY_SHARD
    if not isinstance(version, str) or not version.startswith(VERSION_PREFIX) or "/" in version:
        raise RetrievalError(f"{index_dir / POINTER} names an invalid version {version!r}; rebuild the index")
    return index_dir / version / "shard"


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` so that every reader sees either the old or the new file, durably."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class WriterLock:
    """The exclusive right to change one index folder; waits for another holder up to ``timeout`` s,
    saying so once, then gives up with a RetrievalError."""

    def __init__(self, index_dir: Path, name: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.index_dir, self.name, self.timeout = Path(index_dir), name, timeout
        self._fd: int | None = None

    def acquire(self) -> WriterLock:
        """Take the writer lock, waiting up to the timeout for another writer."""
        deadline = time.monotonic() + max(self.timeout, 0.0)
        told = False
        while True:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            path = self.index_dir / WRITER_LOCK
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise RetrievalError(
                        f"index {self.name} is still being built or changed by another process "
                        f"({_holder(self.index_dir)}) after waiting {self.timeout:g} s; try again when it "
                        "has finished, or raise retrieval.lock_timeout"
                    ) from None
                if not told:
                    log.warning(
                        "index %s is being built or changed by another process (%s); waiting up to %g s",
                        self.name, _holder(self.index_dir), self.timeout,
                    )
                    told = True
                time.sleep(_POLL_S)
                continue
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder deleted the index (and this lock file) meanwhile: lock the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the writer lock back."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(index_dir: Path) -> str:
    try:
        return (index_dir / WRITER_LOCK).read_text(encoding="utf-8").strip() or "unknown pid"
    except OSError:
        return "unknown pid"


def new_version(index_dir: Path) -> Path:
    """A fresh, empty version folder (only a writer holding the lock calls this)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    path = index_dir / f"{VERSION_PREFIX}{stamp}-{secrets.token_hex(4)}"
    path.mkdir(parents=True)
    return path


def publish(index_dir: Path, version: Path, description: dict[str, Any]) -> None:
    """Make ``version`` the current one: readers opening from now on see it."""
    write_json_atomically(index_dir / POINTER, {**description, "version": version.name})


def prune(index_dir: Path, keep: str | None) -> None:
    """Remove every version but ``keep``, an older ``shard/`` once a version is current (or when
    ``keep`` is None and the pointer is gone), and the views of readers that have gone away.
    Only a writer holding the lock calls this."""
    if not index_dir.is_dir():
        return
    drop_legacy = keep is not None or not (index_dir / POINTER).exists()
    for entry in index_dir.iterdir():
        stale_version = entry.name.startswith(VERSION_PREFIX) and entry.name != keep
        replaced_legacy = entry.name == LEGACY_SHARD and drop_legacy
        if (stale_version or replaced_legacy) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
    prune_views(index_dir)


def prune_views(index_dir: Path) -> None:
    """Remove the views whose reader has exited (their lock is free) — e.g. after a kill -9."""
    try:
        views = list((index_dir / VIEWS).iterdir())
    except FileNotFoundError:  # none, or the last reader just removed the empty folder
        return
    now = time.time()
    for view in views:
        try:
            if now - view.stat().st_mtime < STALE_AFTER_S:
                continue
            fd = os.open(view / ".lock", os.O_RDWR)
        except FileNotFoundError:
            shutil.rmtree(view, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its reader is alive
        else:
            shutil.rmtree(view, ignore_errors=True)
        finally:
            os.close(fd)


def remove_if_unused(index_dir: Path) -> None:
    """Remove an index folder left with nothing in it but the writer lock and empty views."""
    try:
        (index_dir / VIEWS).rmdir()  # only when empty
    except FileNotFoundError:
        pass
    except OSError:
        return  # a reader has (or is making) its view there
    try:
        unused = all(entry.name == WRITER_LOCK for entry in index_dir.iterdir())
    except FileNotFoundError:
        return
    if unused:
        shutil.rmtree(index_dir, ignore_errors=True)


class ReaderView:
    """A private view of the index's current version for one reading process; ``close`` removes it."""

    def __init__(self, index_dir: Path, description: dict[str, Any], source: Path, view: Path, lock_fd: int) -> None:
        self.index_dir, self.description, self.source, self.view = index_dir, description, source, view
        self._lock_fd: int | None = lock_fd

    @property
    def shard(self) -> Path:
        """The shard folder of the version this view reads."""
        return self.view / "shard"

    @classmethod
    def open(cls, index_dir: Path) -> ReaderView | None:
        """A view of the version current now (None when the folder holds no index)."""
        index_dir = Path(index_dir)
        prune_views(index_dir)
        for _ in range(_ATTEMPTS):
            description = read_pointer(index_dir)
            if description is None:
                return None
            source = shard_dir(index_dir, description)
            view, fd = _new_view(index_dir)
            try:
                _link_tree(source, view / "shard")
                current = read_pointer(index_dir)
                if current is None or current.get("version") != description.get("version"):
                    raise FileNotFoundError(source)  # swapped while linking: the links may be incomplete
            except FileNotFoundError:
                # a writer swapped the version and removed this one while we linked it: retry
                _drop_view(view, fd)
                continue
            except BaseException:
                _drop_view(view, fd)
                raise
            return cls(index_dir, description, source, view, fd)
        raise RetrievalError(f"index {index_dir.name} kept changing while it was opened; try again")

    def close(self) -> None:
        """Stop reading the version (it may be deleted once nobody reads it)."""
        if self._lock_fd is not None:
            _drop_view(self.view, self._lock_fd)
            self._lock_fd = None
            try:
                self.view.parent.rmdir()  # only when no other reader has a view there
            except OSError:
                pass


def _new_view(index_dir: Path) -> tuple[Path, int]:
    view = index_dir / VIEWS / f"{os.getpid()}-{secrets.token_hex(4)}"
    for _ in range(_ATTEMPTS):
        try:
            view.mkdir(parents=True)
            break
        except FileNotFoundError:  # another reader removed the empty views folder just then
            continue
    fd = os.open(view / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return view, fd


def _drop_view(view: Path, fd: int) -> None:
    shutil.rmtree(view, ignore_errors=True)
    os.close(fd)


def _link_tree(source: Path, target: Path) -> None:
    """Mirror ``source`` under ``target`` with hard links (the engine replaces the files it rewrites
    rather than editing them, except memory-mapped ones, which readers only ever write unchanged).
    A write-ahead log is copied instead: the engine locks and appends to it."""
    if not source.is_dir():
        raise FileNotFoundError(source)

    def fail(error: OSError) -> None:
        raise error

    for folder, _, files in os.walk(source, onerror=fail):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        private = relative.parts[:1] == ("wal",)
        for file in files:
            src, dst = Path(folder) / file, target / relative / file
            if private:
                _copy_sparse(src, dst)
                continue
            try:
                os.link(src, dst)
            except FileNotFoundError:
                raise
            except OSError:  # a file system without hard links
                shutil.copy2(src, dst)


def _copy_sparse(src: Path, dst: Path, chunk: int = 1 << 20) -> None:
    """Copy a (mostly preallocated, all-zero) file without writing its holes."""
    with open(src, "rb") as reader, open(dst, "wb") as writer:
        while block := reader.read(chunk):
            if block.count(0) == len(block):
                writer.seek(len(block), os.SEEK_CUR)
            else:
                writer.write(block)
        writer.truncate()
