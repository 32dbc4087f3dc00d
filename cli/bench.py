"""``claire bench ...``: the benchmarks that print speed figures."""

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from claire.cli.options import DatasetOpt, Settings, console, with_settings
from claire.errors import ConfigError


def bench_startup(
    runs: Annotated[int, typer.Option("--runs", min=1, help="Runs of each case (the median is reported).")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = False,
) -> None:
    """How soon `claire` answers: --help, an argument error and check's first output, as ratios to importing Typer and Rich."""
    from claire.bench.startup import run_startup_bench

    run_startup_bench(runs=runs, console=console, as_json=as_json)


def bench_llm(calls: Annotated[int, typer.Option("--calls")] = 300) -> None:
    """LLM-layer overhead per call, concurrency speed-up and cache-hit latency (local mock server)."""
    from claire.bench.llm import run_llm_bench

    run_llm_bench(calls=calls, console=console)


def bench_prompts(
    dataset: Annotated[Path, typer.Option("--dataset", help="WikiCollide claims (JSON)")],
    corpus: Annotated[Path, typer.Option("--corpus", help="the blocks to search (JSONL), indexed for the run")],
    window: Annotated[int, typer.Option("--window", help="the small model's context window")] = 8192,
) -> None:
    """Prompt tokens per claim before and after the context budget (local mock server)."""
    from claire.bench.prompts import run_prompt_bench

    run_prompt_bench(dataset, corpus, window=window, console=console)


def bench_retrieval(
    n: Annotated[int, typer.Option("--n", min=1, help="Synthetic blocks for the embedded engine.")] = 100_000,
    queries: Annotated[int, typer.Option("--queries")] = 200,
    baseline_n: Annotated[Optional[int], typer.Option("--baseline-n", help="Blocks for the qdrant-client local-mode baseline.")] = None,
) -> None:
    """Upsert rate, HNSW build, size and query latency: embedded engine vs qdrant-client local mode."""
    from claire.bench.retrieval import run_retrieval_bench

    run_retrieval_bench(n, queries=queries, baseline_n=baseline_n, console=console)


@with_settings("model", "base_url", "config_file", "sets")
def bench_retrieval_quality(
    dataset: DatasetOpt,
    k: Annotated[int, typer.Option("-k", min=1)] = 15,
    rerank: Annotated[bool, typer.Option("--rerank", help="Also hybrid + RankGPT (needs an LLM).")] = False,
    *,
    settings: Settings,
) -> None:
    """Recall@k and MRR of dense, BM25, hybrid (and hybrid + RankGPT) on a WikiCollide file's traces."""
    import threading

    import asyncio

    from claire.llm.client import ChatClient
    from claire.agent.runtime import prompt_library
    from claire.bench.retrieval import run_retrieval_quality
    from claire.indexes.rankgpt import RankGPTReranker

    reranker: Any = None
    if rerank:
        config = settings.resolve()
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        llm = ChatClient.from_config(config.llm)
        ranker = RankGPTReranker(llm, prompt_library(config), window=config.retrieval.rerank_window,
                                 step=config.retrieval.rerank_step, max_chars=config.retrieval.rerank_max_chars)

        def rerank_now(query, hits):  # the bench is synchronous; the LLM client lives on its own loop
            return asyncio.run_coroutine_threadsafe(ranker.rerank(query, hits), loop).result()

        reranker = rerank_now

    run_retrieval_quality(dataset, k=k, console=console, reranker=reranker)


def counts(text: str, option: str) -> tuple[int, ...]:
    """The comma-separated positive whole numbers an option gives (a ConfigError otherwise)."""
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise ConfigError(f"{option} takes comma-separated whole numbers of at least 1 (got {text!r})")
    return values


def bench_ingest(
    pages: Annotated[int, typer.Option("--pages", help="Pages in the generated dump (parse rate over all of them).")] = 20_000,
    build_pages: Annotated[int, typer.Option("--build-pages", help="Pages the end-to-end build indexes.")] = 1_500,
    encode_sample: Annotated[int, typer.Option("--encode-sample", help="Blocks for the raw-encode figure.")] = 2_000,
    memory_pages: Annotated[str, typer.Option("--memory-pages", help="Comma-separated dump sizes for peak memory.")] = "5000,20000",
    workers: Annotated[Optional[int], typer.Option("--workers", help="Parsing processes for the build (default as for index build); the parse figure always also uses a pool of cores - 1 (at least 1).")] = None,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda or auto.")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Also print the figures as JSON (after the tables).")] = False,
) -> None:
    """Dump ingestion: parse pages/s, raw encode vs end-to-end build blocks/s, peak memory by dump size, resume overhead."""
    from claire.bench.ingest import run_ingest_bench

    sizes = counts(memory_pages, "--memory-pages")
    figures = run_ingest_bench(pages=pages, build_pages=build_pages, encode_sample=encode_sample, memory_pages=sizes,
                               workers=workers, device=device, console=console)
    if as_json:
        print(json.dumps(figures, indent=2))


def bench_eval(
    claims: Annotated[int, typer.Option("--claims", min=1)] = 48,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    system: Annotated[str, typer.Option("--system", help="tiny (a 3-call stand-in), or the real claire / rav on the demo index.")] = "tiny",
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs at each concurrency above 1; the median is reported.")] = 3,
    concurrency: Annotated[int, typer.Option("--concurrency", min=2, max=512,
                                             help="The concurrency measured against the ideal (beside 1).")] = 16,
) -> None:
    """Batch-eval throughput at concurrency 1 and --concurrency (16) vs the ideal, and a warm-cache re-run."""
    from claire.bench.eval import run_eval_bench

    run_eval_bench(claims=claims, latency=latency, system=system, repeat=repeat, concurrencies=(1, concurrency),
                   console=console)


def bench_cascade(
    claims: Annotated[int, typer.Option("--claims", min=2)] = 40,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.05,
    cut: Annotated[float, typer.Option("--cut", min=0.0, max=1.0, help="The cascade's first-pass cut (agent.cascade_cut).")] = 0.3,
) -> None:
    """The cascade's LLM calls, tokens and seconds per claim against CLAIRE alone (local mock server)."""
    from claire.bench.cascade import run_cascade_bench

    run_cascade_bench(claims=claims, latency=latency, cut=cut, console=console)


def bench_resolve(
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Cases resolved at once.")] = 1,
) -> None:
    """Which side is right: LLM calls and seconds per resolve on the shipped cases (local mock server, the oracle's answers)."""
    from claire.bench.resolve import run_resolve_bench

    run_resolve_bench(latency=latency, concurrency=concurrency, console=console)


def bench_worklist(
    latency: Annotated[str, typer.Option("--latency", help="Seconds per LLM answer to measure, comma-separated.")] = "0.2,2",
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Facts in flight (eval.concurrency).")] = 32,
    all_articles: Annotated[bool, typer.Option("--all", help="Every article of the demo index, not only the seven with planted errors.")] = False,
    engines: Annotated[bool, typer.Option("--engines", help="Compare the local engine with the Ray engine on 1 and 2 workers instead (at the first --latency; needs the ray extra).")] = False,
) -> None:
    """The corpus run: facts per second, LLM calls per fact and its overhead over the executor alone (oracle over HTTP)."""
    from claire.bench.worklist import run_engine_bench, run_worklist_bench

    try:
        latencies = tuple(float(value) for value in latency.split(",") if value.strip())
    except ValueError:
        raise ConfigError(f"--latency takes seconds, comma-separated (e.g. 0.2,2), got {latency!r}") from None
    if engines:
        run_engine_bench(latency=latencies[0], concurrency=concurrency, all_articles=all_articles, console=console)
    else:
        run_worklist_bench(latencies=latencies, concurrency=concurrency, all_articles=all_articles, console=console)


def bench_watch(
    edits: Annotated[int, typer.Option("--edits", min=1, help="Edits in the replayed stream.")] = 24,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    system: Annotated[str, typer.Option("--system", help="The system checking each fact.")] = "claire",
    in_flight: Annotated[str, typer.Option("--in-flight", help="Edits in flight to measure, comma-separated.")] = "1,8",
    rate: Annotated[float, typer.Option("--rate", min=0.0, help="Edits a second the stream sends (0: all at once).")] = 0.0,
) -> None:
    """The patrol: edits handled per second, each edit's lag and peak memory, at each number of edits in flight."""
    from claire.bench.watch import run_watch_bench

    run_watch_bench(edits=edits, latency=latency, system=system, in_flight=counts(in_flight, "--in-flight"), rate=rate,
                    console=console)


def bench_serve(
    facts: Annotated[int, typer.Option("--facts", help="Facts in the scanned article.")] = 40,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Facts checked at once.")] = 8,
    latency: Annotated[float, typer.Option("--latency", help="Seconds the mock server adds per LLM call.")] = 0.2,
    clients: Annotated[int, typer.Option("--clients", help="Concurrent clients polling the scan status.")] = 100,
    polls: Annotated[int, typer.Option("--polls", help="Status polls per client.")] = 20,
) -> None:
    """Web app: time to the first highlighted fact and to a finished scan, and status-poll latency under load."""
    from claire.bench.serve import run_serve_bench

    run_serve_bench(facts=facts, concurrency=concurrency, latency=latency, clients=clients, polls=polls, console=console)


def bench_languages(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = False,
    infosync: Annotated[Optional[Path], typer.Option("--infosync", help="Measure the infobox alignment instead, on InfoSync's test set in its published layout (a folder holding Final_Test_Set_Eng_X.json and Final_Test_Set_Eng_X/).")] = None,
) -> None:
    """The multilingual demo index: build rate, query latency and cross-lingual recall@k (e5-small
    against MiniLM); with --infosync, the infobox pass's field alignment (precision, recall, F1)."""
    from claire.bench.languages import run_infobox_bench, run_languages_bench

    shown = console if not as_json else Console(quiet=True)
    if infosync is not None:
        if not (infosync / "Final_Test_Set_Eng_X.json").is_file():
            raise ConfigError(f"{infosync} holds no Final_Test_Set_Eng_X.json (InfoSync's data/final_test_set folder)")
        results: Any = run_infobox_bench(infosync, console=shown)
    else:
        results = run_languages_bench(console=shown)
    if as_json:
        print(json.dumps(results, indent=2))
