"""Dump-ingestion benchmark on a generated dump (``claire bench ingest``).

On one generated MediaWiki XML dump (bz2) of ``pages`` pages it measures, in one run:

1. **parse** — read + convert every page: pages/s in this process and with a process pool of
   ``cores - 1`` processes (the build's parsing path, no encoding);
2. **raw encode** — blocks/s of the embedder alone on ``encode_sample`` of the dump's blocks in
   one call (sorted by length as a whole: the ceiling for a build), cold (the first pass) and
   warm (the same pass again, as a long build runs);
3. **end-to-end build** — the real ``build_from_dump`` over the first ``build_pages`` pages
   (reader, parsing pool, encode and store stages overlapped, ledger): blocks/s, its fraction of
   warm raw encode (2), each stage's busy seconds, and on a GPU how busy the GPU was;
4. **peak memory** — each size in ``memory_pages`` built in a fresh subprocess (full pipeline;
   the embedder capped at ``memory_seq`` tokens a passage so large dumps run in minutes on a
   small CPU): the builder's peak RSS while streaming (all of it, and anonymous memory only —
   the rest is the embedded index's mapped files) and overall (finalize builds the HNSW graph,
   which grows with the corpus), and the parsing processes' peak;
5. **resume overhead** — re-running over a dump whose pages are all indexed (the path a resumed
   build takes through its finished pages): seconds and pages/s of skipping;
6. **full-Wikipedia extrapolation** — the rates above applied to English Wikipedia (~7M articles,
   ~50M blocks): encoding and parsing hours on this machine and device, and the embedded index's
   disk per block (its growth between the two largest runs of (4)).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from claire.ingestion.dumps.convert import convert_pages
from claire.ingestion.dumps.readers import DumpReader
from claire.indexes.embedders import load_embedder
from claire.ingestion.encoding import BatchEncoder
from claire.ingestion.dump_build import IngestOptions, build_from_dump, default_batch_size, default_workers, update_from_dump
from claire.testing.dumps import iter_generated_pages, write_xml_dump

TARGET_FRACTION = 0.9
WIKIPEDIA_ARTICLES = 7_000_000  # English Wikipedia, 2026 (planning figures, see README)
WIKIPEDIA_BLOCKS = 50_000_000

_MEMORY_CHILD = """
import json, multiprocessing, sys, threading, time
from pathlib import Path
from claire.ingestion.dump_build import IngestOptions, build_from_dump

def rss_mb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith(field)) / 1024
    except (OSError, StopIteration):
        return 0.0

from claire.indexes.catalog import IndexStore
peak_worker = peak_stream = peak_stream_anon = 0.0
finalizing = False
def watch():  # sampled: ru_maxrss of a spawned child counts its parent's pages
    global peak_worker, peak_stream, peak_stream_anon
    while True:
        for child in multiprocessing.active_children():
            peak_worker = max(peak_worker, rss_mb(child.pid, "VmRSS:"))
        if not finalizing:
            peak_stream = max(peak_stream, rss_mb("self", "VmRSS:"))
            peak_stream_anon = max(peak_stream_anon, rss_mb("self", "RssAnon:"))
        time.sleep(0.2)

original_finalize = IndexStore.finalize
def finalize(self):
    global finalizing
    finalizing = True
    return original_finalize(self)
IndexStore.finalize = finalize

threading.Thread(target=watch, daemon=True).start()
dump, root, pages, workers, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
options = IngestOptions(workers=workers, device="cpu", show_progress=False, limit_pages=pages, max_seq_length=seq)
summary = build_from_dump(dump, name="memory", root=Path(root), options=options)
print(json.dumps({"pages": summary.pages_read, "blocks": summary.blocks_written, "seconds": summary.seconds,
                  "rss_mb": rss_mb("self", "VmHWM:"), "stream_rss_mb": peak_stream, "stream_anon_mb": peak_stream_anon,
                  "workers_rss_mb": peak_worker}))
"""


def _parse_rate(dump: Path, workers: int) -> tuple[float, int, int]:
    """(pages/s, pages, blocks) reading and converting the whole dump."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    started = time.monotonic()
    pages = blocks = 0
    chunk: list = []
    if workers <= 0:
        for page in DumpReader(dump):
            pages += 1
            blocks += sum(len(r.blocks) for r in convert_pages([page]))
        return pages / (time.monotonic() - started), pages, blocks
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futures = []
        for page in DumpReader(dump):
            pages += 1
            chunk.append(page)
            if len(chunk) == 64:
                futures.append(pool.submit(convert_pages, chunk))
                chunk = []
            while len(futures) > 4 * workers:
                blocks += sum(len(r.blocks) for r in futures.pop(0).result())
        if chunk:
            futures.append(pool.submit(convert_pages, chunk))
        for future in futures:
            blocks += sum(len(r.blocks) for r in future.result())
    return pages / (time.monotonic() - started), pages, blocks


class GpuSampler:
    """Samples the GPU's utilisation during a block (``nvidia-smi``, twice a second); nothing on a CPU."""

    def __init__(self, device: str):
        self.device = device
        self.samples: list[float] = []
        self._stop = False

    def __enter__(self) -> "GpuSampler":
        if self.device == "cuda" and shutil.which("nvidia-smi"):
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop:
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                self.samples.append(float(out.strip().splitlines()[0]))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                return
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        self._stop = True

    def summary(self) -> str | None:
        """Mean and peak utilisation, or None when none was sampled."""
        if not self.samples:
            return None
        return f"mean {sum(self.samples) / len(self.samples):.0f}%, peak {max(self.samples):.0f}% ({len(self.samples)} samples)"


def _memory_run(dump: Path, root: Path, pages: int, workers: int, seq: int) -> dict:
    result = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(dump), str(root), str(pages), str(workers), str(seq)],
                            capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    if result.returncode != 0:
        raise RuntimeError(f"memory run at {pages} pages failed: {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_ingest_bench(
    *,
    pages: int = 20_000,
    build_pages: int = 1_500,
    encode_sample: int = 2_000,
    memory_pages: tuple[int, ...] = (5_000, 20_000),
    memory_seq: int = 16,
    workers: int | None = None,
    device: str = "cpu",
    console: Console,
) -> dict:
    """Run the ingest benchmark and print its tables; returns the figures."""
    pool_size = max(1, (os.cpu_count() or 2) - 1)
    workers = default_workers(device) if workers is None else workers
    figures: dict = {"pages": pages, "workers": workers, "parse_pool": pool_size, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="claire-ingest-bench-") as tmp:
        root = Path(tmp)
        dump = root / "generated.xml.bz2"
        started = time.monotonic()
        write_xml_dump(dump, iter_generated_pages(max((pages, *memory_pages))))
        console.print(f"generated {max((pages, *memory_pages)):,} pages ({dump.stat().st_size / 1e6:.1f} MB bz2) "
                      f"in {time.monotonic() - started:.1f} s; workers={workers}, cores={os.cpu_count()}")
        subset = root / "subset.xml.bz2"
        write_xml_dump(subset, iter_generated_pages(pages))

        single, _, _ = _parse_rate(subset, 0)
        pooled, n_pages, n_blocks = _parse_rate(subset, pool_size)
        figures.update(parse_pages_per_s_1proc=round(single, 1), parse_pages_per_s_pool=round(pooled, 1),
                       blocks_per_page=round(n_blocks / n_pages, 2))
        console.print(f"parse: {single:.0f} pages/s in one process, {pooled:.0f} pages/s with {pool_size} worker(s) "
                      f"({n_blocks / n_pages:.2f} blocks/page)")

        texts = []
        for page in DumpReader(subset):
            texts += [b.embed_text() for r in convert_pages([page]) for b in r.blocks]
            if len(texts) >= encode_sample:
                break
        texts = texts[:encode_sample]
        batch = default_batch_size(device)
        encoder = BatchEncoder(load_embedder("minilm"), device=device, batch_size=batch)
        started = time.monotonic()
        encoder.encode(texts)  # cold: the first pass (kernels compiled, buffers allocated, caches cold)
        cold = len(texts) / (time.monotonic() - started)
        started = time.monotonic()
        encoder.encode(texts)  # warm: the same pass again, as every batch after the first runs in a build
        raw = len(texts) / (time.monotonic() - started)
        encoder.close()
        figures.update(raw_encode_blocks_per_s=round(raw, 1), raw_encode_cold_blocks_per_s=round(cold, 1),
                       device=encoder.device, batch_size=batch)
        console.print(f"raw encode ({encoder.device}, batch {batch}): warm {raw:.1f} blocks/s, cold {cold:.1f} blocks/s "
                      f"over {len(texts):,} blocks")

        options = IngestOptions(workers=workers, device=device, show_progress=False, limit_pages=build_pages, batch_size=batch)
        with GpuSampler(encoder.device) as gpu:
            summary = build_from_dump(subset, name="bench", root=root / "idx", options=options)
        e2e = summary.blocks_written / summary.seconds
        stages = {name: round(seconds, 2) for name, seconds in summary.stage_seconds.items()}
        figures.update(build_pages=summary.pages_read, build_blocks=summary.blocks_written,
                       build_seconds=summary.seconds, build_blocks_per_s=round(e2e, 1),
                       build_fraction_of_raw=round(e2e / raw, 3), stage_busy_seconds=stages,
                       gpu_utilisation=gpu.summary())
        console.print(f"end-to-end build of {summary.pages_read:,} pages: {summary.blocks_written:,} blocks in "
                      f"{summary.seconds:.1f} s = {e2e:.1f} blocks/s = {e2e / raw:.2f} of warm raw encode "
                      f"(target >= {TARGET_FRACTION}; finalize included)")
        busy = Table("stage", "busy seconds", "share of the build", title="where the build's time went (stages overlap)")
        processes = max(workers, 1)  # 0: parsed in this process
        for name in ("parse", "sparse", "encode", "upsert", "finalize"):
            if name in stages:  # parse and BM25 are CPU seconds summed over the parsing processes
                share = stages[name] / summary.seconds / (processes if name in ("parse", "sparse") else 1)
                busy.add_row(name, f"{stages[name]:.1f}", f"{share:.0%}" + (f" of {processes} process{'es' if processes > 1 else ''}" if name in ("parse", "sparse") else ""))
        if figures["gpu_utilisation"]:
            busy.caption = "GPU busy: " + figures["gpu_utilisation"]
        console.print(busy)

        resume_started = time.monotonic()
        again = update_from_dump(subset, name="bench", root=root / "idx",
                                 options=IngestOptions(workers=workers, device=device, show_progress=False,
                                                       limit_pages=build_pages))
        skip_seconds = time.monotonic() - resume_started
        figures.update(resume_skip_pages=again.unchanged, resume_skip_seconds=round(skip_seconds, 2),
                       resume_skip_pages_per_s=round(again.unchanged / skip_seconds, 1))
        console.print(f"resume overhead: {again.unchanged:,} already-indexed pages re-read and skipped in "
                      f"{skip_seconds:.1f} s ({again.unchanged / skip_seconds:.0f} pages/s, model load and finalize included)")

        figures["memory"] = []
        if memory_pages:
            table = Table("pages", "blocks", "build s", "builder streaming: RSS / anon (MB)",
                          "builder peak incl. finalize (MB)", "parsing worker (MB)", "index on disk (MB)",
                          title=f"peak memory (full pipeline, embedder capped at {memory_seq} tokens/passage); "
                                "the embedded engine's index (mapped files, HNSW build at finalize) grows with the corpus")
            for size in memory_pages:
                run = _memory_run(dump, root / f"mem{size}", size, pool_size, memory_seq)  # with a parsing pool
                run["index_bytes"] = _folder_bytes(root / f"mem{size}")
                figures["memory"].append(run)
                table.add_row(f"{run['pages']:,}", f"{run['blocks']:,}", f"{run['seconds']:.0f}",
                              f"{run['stream_rss_mb']:.0f} / {run['stream_anon_mb']:.0f}", f"{run['rss_mb']:.0f}",
                              f"{run['workers_rss_mb']:.0f}", f"{run['index_bytes'] / 1e6:,.0f}")
            console.print(table)
        figures["wikipedia"] = _extrapolate(figures, console)
    return figures


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _extrapolate(figures: dict, console: Console) -> dict:
    """English Wikipedia at the rates this run measured (``figures``); printed and returned. Disk
    per block is the growth between the two largest memory runs (a small index is mostly the
    engine's preallocated files), so it needs two of them."""
    encode_h = WIKIPEDIA_BLOCKS / figures["build_blocks_per_s"] / 3600
    raw_h = WIKIPEDIA_BLOCKS / figures["raw_encode_blocks_per_s"] / 3600
    parse_h = WIKIPEDIA_ARTICLES / figures["parse_pages_per_s_pool"] / 3600
    result = {
        "articles": WIKIPEDIA_ARTICLES, "blocks": WIKIPEDIA_BLOCKS, "device": figures["device"],
        "build_hours": round(encode_h, 1), "raw_encode_hours": round(raw_h, 1), "parse_hours": round(parse_h, 1),
    }
    table = Table("measure", "figure", title=f"English Wikipedia (~{WIKIPEDIA_ARTICLES / 1e6:.0f}M articles, "
                                              f"~{WIKIPEDIA_BLOCKS / 1e6:.0f}M blocks) at the rates measured above")
    table.add_row(f"build at {figures['build_blocks_per_s']:.0f} blocks/s ({figures['device']}, end to end)", f"{encode_h:,.0f} h")
    table.add_row(f"raw encode at {figures['raw_encode_blocks_per_s']:.0f} blocks/s", f"{raw_h:,.0f} h")
    table.add_row(f"parsing at {figures['parse_pages_per_s_pool']:.0f} pages/s ({figures['parse_pool']} process(es))",
                  f"{parse_h:,.1f} h")
    runs = sorted(figures.get("memory", []), key=lambda run: run["blocks"])[-2:]
    if len(runs) == 2 and runs[1]["blocks"] > runs[0]["blocks"]:
        per_block = (runs[1]["index_bytes"] - runs[0]["index_bytes"]) / (runs[1]["blocks"] - runs[0]["blocks"])
        result.update(index_bytes_per_block=round(per_block), embedded_index_gb=round(WIKIPEDIA_BLOCKS * per_block / 1e9))
        table.add_row(f"embedded index on disk ({per_block:,.0f} B a block, growth between the memory runs)",
                      f"{result['embedded_index_gb']:,} GB")
    table.caption = ("Generated pages are shorter than real articles: parsing real ones is slower per page. "
                     "Past a few million blocks use a Qdrant server (README: which store for which size).")
    console.print(table)
    return result
