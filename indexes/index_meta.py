"""What an index records about itself (:class:`IndexMeta`: its embedder, corpus statistics and
build), how blocks become Qdrant point ids, and which index names a user may give."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claire.errors import RetrievalError
from claire.indexes import sparse

FORMAT = 1
"""The version of the index layout this CLAIRE writes."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass
class IndexMeta:
    """What an index records about itself: its embedder, corpus statistics and build."""

    name: str
    embedder: str
    embedder_model: str
    dim: int
    blocks: int = 0
    documents: int = 0
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    build_seconds: float = 0.0
    backend: str = ""
    sparse_model: str = f"bm25-{sparse.LANGUAGE}"
    complete: bool = False
    format: int = FORMAT
    int8: bool = False  # dense vectors also kept as int8 (scalar quantization; searches rescore with the floats)
    corpus_digest: str = ""  # a digest of the corpus file it was built from, when one build made it (the demo's)
    claims_of: str = ""  # the benchmark file whose claims' passages it holds (--from-wikicollide), by name
    claim_ids: list[str] = field(default_factory=list)  # those claims: `claire eval` warns on others
    languages: list[str] = field(default_factory=list)  # the editions its blocks name (empty: none named)

    def to_dict(self) -> dict[str, Any]:
        """The description as plain data (what meta.json and a collection's metadata hold)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> IndexMeta:
        """A description from plain data (unknown keys ignored; ``where`` names it in errors)."""
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{key: value for key, value in data.items() if key in known})
        except (AttributeError, TypeError):
            raise RetrievalError(f"{where} does not describe a CLAIRE index; delete and rebuild it") from None


def point_id(block_id: str) -> int:
    """The Qdrant point id of a block: 63 bits of a hash of its id (the id stays in the payload)."""
    return int.from_bytes(hashlib.blake2b(block_id.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def check_name(name: str) -> None:
    """Refuse names a user may not give (CLAIRE's own temporary folders start with a dot)."""
    if not _NAME.match(name):
        raise RetrievalError(
            f"invalid index name {name!r}: use letters, digits, '_', '-' or '.', starting with a letter or digit"
        )


def read_meta_file(path: Path) -> IndexMeta:
    """The description in an index's meta.json (a clear error when it is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RetrievalError(f"cannot read {path} ({exc}); delete the index and rebuild it") from None
    return IndexMeta.from_dict(data, str(path))
