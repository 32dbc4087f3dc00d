"""Uniform random samples of an index's blocks or articles, reproducible from a seed.

Every point of the index is listed (ids and titles only), put in a canonical order (point ids
are hashes of block ids, so the order does not depend on how the index was built or stored),
and ``random.Random(seed).sample`` draws without replacement: every block (or every article)
has the same chance, and the same seed on the same index gives the same sample.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from claire.errors import ConfigError
from claire.indexes.store import IndexStore, TITLE

Unit = Literal["block", "article"]


@dataclass
class IndexSample:
    """Blocks drawn at random from an index, with what the draw covered."""
    unit: Unit
    seed: int
    corpus_blocks: int
    corpus_articles: int
    units: list[str]  # what was drawn, in draw order: block ids, or article titles
    blocks: list[dict] = field(default_factory=list)  # the payloads of the sampled blocks, in draw order


def sample_index(store: IndexStore, n: int, *, seed: int, unit: Unit = "block") -> IndexSample:
    """Draw ``n`` blocks (``unit="block"``) or ``n`` articles with all their blocks
    (``unit="article"``) uniformly at random; ``n`` larger than the corpus takes everything."""
    if n < 1:
        raise ConfigError(f"the number of {unit}s to sample must be at least 1, got {n}")
    if unit not in ("block", "article"):
        raise ConfigError(f"unknown sampling unit {unit!r}; use block or article")
    by_title: dict[str, list[int]] = {}
    for point, payload in store.iter_points([TITLE]):
        by_title.setdefault(str(payload.get(TITLE, "")), []).append(point)
    all_ids = sorted(point for points in by_title.values() for point in points)
    if not all_ids:
        raise ConfigError("the index holds no blocks to sample")
    rng = random.Random(seed)
    if unit == "block":
        drawn = rng.sample(all_ids, min(n, len(all_ids)))
        blocks = store.fetch(drawn)
        units = [str(b.get("id")) for b in blocks]
    else:
        titles = sorted(by_title)
        units = rng.sample(titles, min(n, len(titles)))
        drawn = [point for title in units for point in sorted(by_title[title])]
        blocks = store.fetch(drawn)
    return IndexSample(unit=unit, seed=seed, corpus_blocks=len(all_ids), corpus_articles=len(by_title),
                       units=units, blocks=blocks)
