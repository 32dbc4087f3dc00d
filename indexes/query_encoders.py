"""Embedding search queries: through the embedder's PyTorch model, or its ONNX export run by ONNX
Runtime.

Every search embeds one short query. Through PyTorch that costs ~25 ms on a small CPU, most of
it per-call overhead in Python with the interpreter lock held, so claims in flight in one process
(a batch evaluation, the web app) queue behind each other's queries and behind the event loop.
ONNX Runtime runs the whole forward pass in one native call that releases the lock: ~7 ms a query
here, with the event loop running meanwhile.

:func:`query_encoder` picks the encoder for an embedder: ``torch`` is the embedder itself;
``onnx`` is the exported pipeline (tokenised text in, the normalised sentence embedding out,
pooling included), or an error saying why it cannot be had; ``auto`` is the export when it can be
made and passes its check, else PyTorch with one warning. The export is written once per model
and library versions into a folder the caller names (beside the indexes), with the PyTorch
model's vectors of probe texts of several lengths, and every load is checked against those
vectors before it is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from claire.errors import RetrievalError
from claire.indexes.embedders import Embedder

QueryRuntime = Literal["auto", "onnx", "torch"]
RUNTIMES: tuple[str, ...] = ("auto", "onnx", "torch")
EXPORT_FORMAT = 1  # bump when the exported graph's inputs or outputs change
OPSET = 17
TOLERANCE = 1e-4  # largest difference from the PyTorch vectors an export may show on the probes
PROBES = (
    "a",
    "When did the bridge over the river open to traffic?",
    "Paris > History\n" + "The city hosted the world's fair of 1889, for which the iron lattice tower was built. " * 3,
)  # three lengths (1, ~12 and ~70 tokens): a trace that fixed the length or ignored padding shows
log = logging.getLogger(__name__)


class QueryEncoder(Protocol):
    """Turns search queries into vectors for one embedder."""
    runtime: str
    batch_limit: int  # the most queries worth encoding in one call when several wait (see .query_batch)
    lanes: int  # how many encode calls may run at once

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors."""
        ...


class TorchQueryEncoder:
    """Queries embedded by the embedder's own PyTorch model."""

    runtime = "torch"
    batch_limit = 64  # a PyTorch call costs ~20 ms before any work: waiting queries share one
    lanes = 1  # PyTorch spreads one call over the cores itself

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def encode(self, texts: list[str]) -> np.ndarray:
        """The vectors of the queries (PyTorch, or the embedder's own engine)."""
        return self.embedder.encode_queries(list(texts))


class OnnxQueryEncoder:
    """Queries tokenised by the embedder and embedded by an ONNX Runtime session of its export."""

    runtime = "onnx"
    # A query alone costs about what it costs inside a batch (the work is the matrix products), so
    # waiting queries go one at a time: each search gets its vector as soon as it can, instead of
    # every search in a batch waiting for the whole batch (measured: `claire bench eval`). A call
    # runs on one thread, and up to ``lanes`` of them side by side, one a core.
    batch_limit = 1

    def __init__(self, embedder: Embedder, session: Any, inputs: tuple[str, ...]) -> None:
        self.embedder = embedder
        self._session = session
        self._inputs = inputs
        self.lanes = _lanes()
        self._tokenizing = threading.Lock()  # a fast tokenizer is not to be driven by two threads at once

    def encode(self, texts: list[str]) -> np.ndarray:
        """The vectors of the queries (ONNX Runtime)."""
        with self._tokenizing:
            features = self.embedder.model.preprocess([self.embedder.query_prefix + text for text in texts])
        feed = {name: features[name].numpy() for name in self._inputs}
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)


_encoders: dict[str, OnnxQueryEncoder | str] = {}  # export digest -> the loaded encoder, or why there is none
_lock = threading.Lock()


def query_encoder(embedder: Embedder, runtime: str = "auto", *, folder: Path) -> QueryEncoder:
    """The query encoder for ``embedder``: see the module notes for ``runtime``; exports live in
    ``folder``. Loaded encoders are shared by every index opened with the same model."""
    if runtime not in RUNTIMES:
        raise RetrievalError(f"unknown query runtime {runtime!r}; use {', '.join(RUNTIMES)}")
    if runtime == "torch" or embedder.native:  # an engine of its own (e5-small) embeds its queries itself
        return TorchQueryEncoder(embedder)
    with _lock:
        found = _onnx_encoder(embedder, Path(folder))
    if isinstance(found, OnnxQueryEncoder):
        return found
    if runtime == "onnx":
        raise RetrievalError(f"queries cannot run on ONNX Runtime: {found}; set retrieval.query_runtime to auto or torch")
    return TorchQueryEncoder(embedder)


def _onnx_encoder(embedder: Embedder, folder: Path) -> OnnxQueryEncoder | str:
    try:
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as error:
        return _remember(embedder.model_id, f"{error.name} is not installed")
    model = embedder.model
    parameter = next(model.parameters(), None)
    if parameter is None or parameter.device.type != "cpu" or parameter.dtype != torch.float32:
        return f"the {embedder.name} model is not a float32 model on the CPU"
    digest = _digest(embedder)
    if digest not in _encoders:
        _encoders[digest] = _load(embedder, folder / f"{_slug(embedder.model_id)}-{digest[:16]}.onnx")
    return _encoders[digest]


def _remember(key: str, reason: str) -> str:
    if key not in _encoders:
        log.warning("search queries are embedded with PyTorch: %s", reason)
        _encoders[key] = reason
    return reason


def _load(embedder: Embedder, path: Path) -> OnnxQueryEncoder | str:
    """Export (unless done before), open and check the ONNX model; the reason when it fails."""
    inputs = tuple(name for name, value in embedder.model.preprocess(list(PROBES[:2])).items() if hasattr(value, "numpy"))
    for attempt in ("existing", "fresh"):
        try:
            if attempt == "fresh" or not path.is_file():
                _export(embedder, inputs, path)
            encoder = OnnxQueryEncoder(embedder, _session(path), inputs)
            error = _difference(_reference(embedder, path), encoder)
        except Exception as failure:  # a model the exporter or the runtime cannot take
            error = f"{type(failure).__name__}: {' '.join(str(failure).split())[:300]}"
        if error is None:
            return encoder
        if attempt == "existing" and path.is_file():
            for stale in (path, _reference_path(path)):
                with contextlib.suppress(OSError):
                    stale.unlink()  # a damaged or foreign file: export once more
            continue
        break
    log.warning("search queries are embedded with PyTorch: the ONNX export of %s is not usable (%s)", embedder.name, error)
    return f"the ONNX export of {embedder.name} is not usable ({error})"


def _export(embedder: Embedder, inputs: tuple[str, ...], path: Path) -> None:
    import torch

    class Pipeline(torch.nn.Module):
        """The sentence-transformers modules from token ids to the sentence embedding."""

        def __init__(self) -> None:
            super().__init__()
            self.model = embedder.model

        def forward(self, *tensors: Any) -> Any:
            features = dict(zip(inputs, tensors))
            features["modality"] = "text"
            return self.model(features)["sentence_embedding"]

    example = embedder.model.preprocess(list(PROBES[:2]))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    try:
        # The tracer warns about Python branches it records; the check below is what decides.
        with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Pipeline().eval(), tuple(example[name] for name in inputs), str(partial), input_names=list(inputs),
                output_names=["embedding"], dynamic_axes={**axes, "embedding": {0: "batch"}}, opset_version=OPSET,
                dynamo=False,
            )
        os.replace(partial, path)  # another process exporting the same model writes the same bytes
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _session(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # one core a query; concurrent queries take more (``_lanes``)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _lanes() -> int:
    """Queries encoded at once: one a core, leaving one core to the event loop, at most four. (On a
    2-core machine a second lane only took CPU from the claims' own work: `claire bench eval`.)"""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def _reference_path(path: Path) -> Path:
    return path.with_name(path.stem + ".probes.npy")


def _reference(embedder: Embedder, path: Path) -> np.ndarray:
    """The PyTorch model's vectors of the probes, kept beside the export: computing them costs a
    first PyTorch forward pass (about a second), which a process using the export never needs."""
    saved = _reference_path(path)
    try:
        expected = np.load(saved)
        if expected.shape == (len(PROBES), embedder.dim):
            return expected
    except (OSError, ValueError):
        pass
    expected = embedder.encode(list(PROBES))
    partial = saved.with_name(f".{saved.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        with open(partial, "wb") as handle:
            np.save(handle, expected)
        os.replace(partial, saved)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
    return expected


def _difference(expected: np.ndarray, encoder: OnnxQueryEncoder) -> str | None:
    """Why the export's vectors are not the PyTorch model's ``expected`` ones (probes alone and as
    a padded batch), or None."""
    alone = np.concatenate([encoder.encode([text]) for text in PROBES])
    together = encoder.encode(list(PROBES))
    worst = max(float(np.abs(alone - expected).max()), float(np.abs(together - expected).max()))
    return None if worst <= TOLERANCE else f"its vectors differ from PyTorch's by up to {worst:.2g}"


def _digest(embedder: Embedder) -> str:
    """What the export and its check depend on: the model (its modules' settings and a sample of
    every weight), the library versions, this module's export format and the probe texts."""
    import onnxruntime
    import torch
    import transformers

    model = embedder.model
    digest = hashlib.sha256()
    for part in (embedder.model_id, EXPORT_FORMAT, OPSET, torch.__version__, transformers.__version__,
                 onnxruntime.__version__, model.max_seq_length, PROBES):
        digest.update(f"{part}\n".encode())
    for module in model:
        config = getattr(module, "get_config_dict", lambda: {})()
        digest.update(f"{type(module).__name__}{sorted(config.items())!r}\n".encode())
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            flat = tensor.detach().reshape(-1)
            digest.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
            digest.update(flat[:: max(1, flat.numel() // 256)][:256].float().numpy().tobytes())
            digest.update(flat[-8:].float().numpy().tobytes())
    return digest.hexdigest()


def _slug(model_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id.rsplit("/", 1)[-1])[:60]
