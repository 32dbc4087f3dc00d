"""What the commands share: the consoles, the option types most commands take, resolving the
configuration from defaults, ``claire.toml``, the environment and the flags, running a command's
coroutine, and small checks of command-line input.

Every ``cli`` module imports only Typer, Rich and the light parts of CLAIRE at its top, and the
rest inside the command that needs it: ``claire --help`` and a mistyped option answer without
loading the configuration model, LangChain or the embedder (``claire bench startup`` measures it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from claire.cli.terminal import terminal_console
from claire.errors import ConfigError, DatasetError

if TYPE_CHECKING:
    from claire.config import Config

console = terminal_console()
err = terminal_console(stderr=True, soft_wrap=True)  # an error stays one line, whatever the width

PresetOpt = Annotated[Optional[str], typer.Option(
    "--preset", help="Start from a named preset: paper (the paper's method, the default) or practical (this "
                     "project's additions: hybrid search, snippets, research that goes on after a report, a lenient "
                     "verifier and the project's prompts).")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="A claire.toml to read (default: ./claire.toml).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Override any setting: section.field=value (repeatable).")]
ModelOpt = Annotated[Optional[str], typer.Option("--model", help="LLM model name (llm.model).")]
BaseUrlOpt = Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible endpoint (llm.base_url).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]
RefreshOpt = Annotated[bool, typer.Option("--refresh-cache", help="Ignore cached answers and store fresh ones.")]
IndexOpt = Annotated[Optional[str], typer.Option("--index", help="Index name (retrieval.index; default: the demo corpus).")]
PathOpt = Annotated[Optional[Path], typer.Option("--path", help="Folder holding embedded indexes (retrieval.path).")]
UrlOpt = Annotated[Optional[str], typer.Option("--url", help="Qdrant server URL, or a `claire serve` .../api/search endpoint, instead of the embedded engine (retrieval.url).")]
DatasetOpt = Annotated[Path, typer.Option("--dataset", help="WikiCollide JSON (or JSONL) file, e.g. dev.json or test.json; with --task feverous a FEVEROUS JSONL file.")]
SystemOpt = Annotated[Optional[str], typer.Option(
    "--system", help="claire (default), rav, nli or cascade (a baseline first, claire only where needed).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON only.")]
SectionOpt = Annotated[str, typer.Option("--section", help="The section the passage is from.")]
TextOpt = Annotated[Optional[str], typer.Option("--text", help="The passage.")]
FileOpt = Annotated[Optional[Path], typer.Option("--file", help="Read the passage from a file (at most 1 MB).")]
MaxStepsOpt = Annotated[Optional[int], typer.Option("--max-steps", min=1, help="Step budget (agent.max_steps).")]
DocsPerQueryOpt = Annotated[Optional[int], typer.Option("--docs-per-query", min=1, help="Passages per search (agent.docs_per_query).")]
NoRerankOpt = Annotated[bool, typer.Option("--no-rerank", help="Turn RankGPT reranking off.")]
ToolsOpt = Annotated[Optional[str], typer.Option("--tools", help="Enabled tools, e.g. search,clarify_entity,explain (agent.tools).")]
ConcurrencyOpt = Annotated[Optional[int], typer.Option("--concurrency", min=1, help="Claims in flight at once (eval.concurrency).")]


def resolve(
    config_file: Path | None = None,
    sets: list[str] | None = None,
    **flags: Any,
) -> Config:
    """defaults < claire.toml < environment < --set < explicit flags (None means not given)."""
    import claire.agent.registry  # noqa: F401  (the system, task and tool registries check the names given)
    from claire.config import load_config, parse_assignment

    overrides: dict[str, Any] = dict(parse_assignment(item) for item in sets or [])
    overrides.update({key: value for key, value in flags.items() if value is not None})
    return load_config(config_file, overrides)


def common(model: str | None, base_url: str | None, no_cache: bool, refresh: bool, index: str | None,
           path: Path | None = None, url: str | None = None) -> dict[str, Any]:
    """The settings the common flags stand for (None where a flag was not given)."""
    return {
        "llm.model": model,
        "llm.base_url": base_url,
        "llm.cache": False if no_cache else None,
        "llm.refresh_cache": True if refresh else None,
        "retrieval.index": index,
        "retrieval.path": str(path) if path else None,
        "retrieval.url": url,
    }


def eval_config(config_file: Path | None, sets: list[str] | None, model: str | None, base_url: str | None,
                no_cache: bool, refresh_cache: bool, index: str | None, system: str | None = None,
                concurrency: int | None = None, preset: str | None = None, **more: Any) -> Config:
    """The configuration of a batch command, with a note when the LLM limit is below the claims in flight."""
    flags = {**common(model, base_url, no_cache, refresh_cache, index), "agent.system": system,
             "eval.concurrency": concurrency, "preset": preset}
    flags.update(more)  # a later setting wins (e.g. --index naming cite.index for the citations task)
    config = resolve(config_file, sets, **flags)
    if config.llm.max_concurrency < config.eval.concurrency:
        err.print(f"[yellow]note:[/] {config.eval.concurrency} claims in flight but at most {config.llm.max_concurrency} "
                  "LLM calls at once (llm.max_concurrency); raise it if your endpoint allows")
    return config


def require_api_key(config: Config) -> None:
    """Refuse at once, before anything heavy loads, a run whose OpenAI-compatible endpoint has no
    API key: the LLM client would refuse it the same way, only after the agent and the index."""
    from claire.llm.providers import MISSING_API_KEY, needs_api_key

    if needs_api_key(config.llm):
        raise ConfigError(MISSING_API_KEY)


def require_index(config: Config, index_given: bool, what: str) -> None:
    """Refuse a benchmark run that would search the bundled demo corpus because no index was named:
    its figures would look like results but mean nothing against the benchmark."""
    retrieval = config.retrieval
    if index_given or retrieval.index != "demo" or retrieval.backend != "qdrant" or retrieval.url:
        return
    raise ConfigError(f"{what} needs --index NAME, an index of the corpus the claims come from (build one with "
                      "`claire index build`); --index demo searches the ~200-passage demo corpus, which only makes "
                      "sense for trying the command out")


def run(coro: Any) -> Any:
    """Run a command's coroutine on CLAIRE's event loop."""
    from claire import event_loop

    return event_loop.run(coro)


def check_writable(path: Path, option: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if not path.parent.is_dir():
        raise ConfigError(f"{option}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise ConfigError(f"{option}: {path} is a folder; give a file name")
    if path.exists() and not path.is_file() and not path.is_char_device():  # a FIFO would block the run's end
        raise ConfigError(f"{option}: {path} is not a regular file; give a file name")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise ConfigError(f"{option}: {path} is not writable")


def passage_text(text: str | None, file: Path | None) -> str:
    """The passage given with ``--text`` or read from ``--file`` (exactly one of them)."""
    if (text is None) == (file is None):
        raise ConfigError("give the passage with either --text or --file")
    if file is not None:
        from claire.agent.extraction import MAX_PASSAGE_BYTES
        from claire.files import read_bytes

        try:
            return read_bytes(file, what="passage", hint="a text file of one article (or one section)",
                              limit=MAX_PASSAGE_BYTES).decode("utf-8")
        except DatasetError as error:
            raise ConfigError(str(error)) from None
        except UnicodeDecodeError as error:
            raise ConfigError(f"cannot read {file}: not UTF-8 text (byte {error.start + 1}); save it as UTF-8") from None
    return text or ""
