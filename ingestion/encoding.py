"""Batched passage encoding for index builds: on a GPU in fp16, on the CPU, or on several CPU
processes.

``--device auto`` picks CUDA when torch sees a GPU. On a GPU the model runs in half precision
(vectors are returned as float32 unit vectors either way). ``processes > 1`` on the CPU starts a
sentence-transformers process pool, each process encoding its share of a batch.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from claire.errors import ConfigError, RetrievalError
from claire.indexes.embedders import Embedder

Device = Literal["auto", "cuda", "cpu"]


def resolve_device(device: str) -> str:
    """``cuda`` or ``cpu`` for a requested ``auto``/``cuda``/``cpu``."""
    import torch

    if device not in ("auto", "cuda", "cpu"):
        raise ConfigError(f"unknown device {device!r}; use auto, cuda or cpu")
    has_gpu = torch.cuda.is_available()
    if device == "cuda" and not has_gpu:
        raise RetrievalError("--device cuda was asked for, but torch sees no CUDA GPU here; use --device cpu or auto")
    return "cuda" if device == "cuda" or (device == "auto" and has_gpu) else "cpu"


class BatchEncoder:
    """Encodes lists of passages with ``embedder`` on the chosen device."""

    def __init__(self, embedder: Embedder, *, device: str = "auto", processes: int = 1, batch_size: int = 256,
                 max_seq_length: int | None = None) -> None:
        if processes < 1:
            raise ConfigError(f"encode processes must be at least 1 (got {processes})")
        self.embedder = embedder
        self.batch_size = batch_size
        if embedder.native:  # an engine of its own (e5-small): it runs on this process's CPU cores
            self.device, self.processes, self._pool = "cpu", 1, None
            return
        self.device = resolve_device(device)
        model = embedder.model
        self._seq_length = model.max_seq_length
        if max_seq_length is not None:  # a cap on tokens per passage (benchmarks use it to run long dumps fast)
            model.max_seq_length = max_seq_length
        model.to(self.device)
        if self.device == "cuda":
            model.half()
        self.processes = processes if self.device == "cpu" else 1
        self._pool = model.start_multi_process_pool(["cpu"] * self.processes) if self.processes > 1 else None

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors."""
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        if self._pool is None and self.device == "cpu":
            return self.embedder.encode(texts, batch_size=self.batch_size)
        vectors = self.embedder.model.encode(
            [self.embedder.passage_prefix + text for text in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
            pool=self._pool,
            chunk_size=max(1, -(-len(texts) // self.processes)) if self._pool else None,
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # fp16 rounding: re-normalise in float32
        return vectors / np.maximum(norms, 1e-12)

    def close(self) -> None:
        """Stop the encoding processes."""
        if self.embedder.native:
            return
        if self._pool is not None:
            self.embedder.model.stop_multi_process_pool(self._pool)
            self._pool = None
        model = self.embedder.model  # cached for the process: leave it as it was
        model.max_seq_length = self._seq_length
        if self.device == "cuda":
            model.float().to("cpu")
