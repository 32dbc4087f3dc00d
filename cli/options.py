"""What the commands share: the consoles, the option types commands take, the options many of them
share (each defined once in :data:`SHARED_OPTIONS`; :func:`with_settings` gives a command those it
names, and they reach it as one :class:`Settings`, which resolves the configuration from defaults,
``claire.toml``, the environment and the flags), running a command's coroutine, and small checks
of command-line input.

Every ``cli`` module imports only Typer, Rich and the light parts of CLAIRE at its top, and the
rest inside the command that needs it: ``claire --help`` and a mistyped option answer without
loading the configuration model, LangChain or the embedder (``claire bench startup`` measures it)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
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
PassageTitleOpt = Annotated[str, typer.Option("--title", help="The article the passage is from (left out of the search when its facts are checked).")]
# The fact's own options, one declaration for check, resolve and cite.
FactTitleOpt = Annotated[Optional[str], typer.Option("--title", help="The fact's article (left out of the search).")]
FactSectionOpt = Annotated[Optional[str], typer.Option("--section", help="The fact's section.")]
FactContextOpt = Annotated[Optional[str], typer.Option("--context", help="The passage the fact comes from.")]
TextOpt = Annotated[Optional[str], typer.Option("--text", help="The passage.")]
FileOpt = Annotated[Optional[Path], typer.Option("--file", help="Read the passage from a file (at most 1 MB).")]
MaxStepsOpt = Annotated[Optional[int], typer.Option("--max-steps", min=1, help="Step budget (agent.max_steps).")]
DocsPerQueryOpt = Annotated[Optional[int], typer.Option("--docs-per-query", min=1, help="Passages per search (agent.docs_per_query).")]
NoRerankOpt = Annotated[bool, typer.Option("--no-rerank", help="Turn RankGPT reranking off.")]
ToolsOpt = Annotated[Optional[str], typer.Option("--tools", help="Enabled tools, e.g. search,clarify_entity,explain (agent.tools).")]
StreamUrlOpt = Annotated[Optional[str], typer.Option("--stream-url", help="The recentchange event stream (watch.stream_url; default: Wikimedia's).")]
ReplayOpt = Annotated[Optional[Path], typer.Option("--replay", help="Read recorded events (JSONL, the stream's own shape) instead of the stream.")]
ApiUrlOpt = Annotated[Optional[str], typer.Option("--api-url", help="The MediaWiki Action API for every wiki (default: from each event).")]
WikiOpt = Annotated[Optional[list[str]], typer.Option("--wiki", help="A wiki to check, e.g. enwiki (repeatable; watch.wikis).")]
NamespaceOpt = Annotated[Optional[list[int]], typer.Option("--namespace", help="A namespace to check (repeatable; default 0, articles).")]
BotsOpt = Annotated[bool, typer.Option("--include-bots", help="Check bot edits too.")]
TitleOpt = Annotated[Optional[list[str]], typer.Option("--title", help="Only titles matching this regular expression (repeatable).")]
CategoryOpt = Annotated[Optional[list[str]], typer.Option("--category", help="Only pages in this category (repeatable).")]
EditsOpt = Annotated[Optional[int], typer.Option("--edits-in-flight", min=1, help="Edits checked at once (watch.edits_in_flight).")]
LanguagesOpt = Annotated[Optional[str], typer.Option(
    "--languages", help="Other language editions to search too, e.g. fr,de (retrieval.languages); the fact's article "
                        "in those editions is looked at first. On the demo index, the multilingual demo is used.")]
LanguageOpt = Annotated[Optional[str], typer.Option(
    "--language", help="The language edition of the facts checked, e.g. en (retrieval.language; default en).")]
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


@dataclass
class Settings:
    """The configuration flags commands share, as one value (None or False: the flag was not
    given); :meth:`resolve` turns them, with a command's own settings, into its configuration."""

    config_file: Path | None = None
    sets: list[str] | None = None
    preset: str | None = None
    model: str | None = None
    base_url: str | None = None
    no_cache: bool = False
    refresh_cache: bool = False
    index: str | None = None
    path: Path | None = None
    url: str | None = None
    stream_url: str | None = None  # the patrol's flags (claire watch, claire serve --watch)
    replay: Path | None = None
    api_url: str | None = None
    wiki: list[str] | None = None
    namespace: list[int] | None = None
    include_bots: bool = False
    title: list[str] | None = None
    category: list[str] | None = None
    edits_in_flight: int | None = None
    languages: str | None = None  # checking across language editions
    language: str | None = None

    def resolve(self, **settings: Any) -> Config:
        """defaults < claire.toml < environment < --set < these flags < ``settings`` (a command's own
        flags, by dotted key; None means not given)."""
        flags = {**common(self.model, self.base_url, self.no_cache, self.refresh_cache, self.index, self.path, self.url),
                 "preset": self.preset, "retrieval.languages": self.languages, "retrieval.language": self.language,
                 **self._patrol()}
        flags.update({key: value for key, value in settings.items() if value is not None})
        return resolve(self.config_file, self.sets, **flags)

    def _patrol(self) -> dict[str, Any]:
        return {"watch.stream_url": self.stream_url, "watch.replay": str(self.replay) if self.replay else None,
                "watch.api_url": self.api_url, "watch.wikis": self.wiki or None, "watch.namespaces": self.namespace or None,
                "watch.include_bots": True if self.include_bots else None, "watch.titles": self.title or None,
                "watch.categories": self.category or None, "watch.edits_in_flight": self.edits_in_flight}

    def batch(self, system: str | None = None, concurrency: int | None = None, **settings: Any) -> Config:
        """The configuration of a batch command, with a note when the LLM limit is below the claims
        in flight."""
        config = self.resolve(**{"agent.system": system, "eval.concurrency": concurrency, **settings})
        if config.llm.max_concurrency < config.eval.concurrency:
            err.print(f"[yellow]note:[/] {config.eval.concurrency} claims in flight but at most {config.llm.max_concurrency} "
                      "LLM calls at once (llm.max_concurrency); raise it if your endpoint allows")
        return config


SHARED_OPTIONS: dict[str, tuple[Any, Any]] = {
    "index": (IndexOpt, None), "path": (PathOpt, None), "url": (UrlOpt, None), "preset": (PresetOpt, None),
    "model": (ModelOpt, None), "base_url": (BaseUrlOpt, None), "no_cache": (NoCacheOpt, False),
    "refresh_cache": (RefreshOpt, False), "config_file": (ConfigOpt, None), "sets": (SetOpt, None),
    "stream_url": (StreamUrlOpt, None), "replay": (ReplayOpt, None), "api_url": (ApiUrlOpt, None), "wiki": (WikiOpt, None),
    "namespace": (NamespaceOpt, None), "include_bots": (BotsOpt, False), "title": (TitleOpt, None),
    "category": (CategoryOpt, None), "edits_in_flight": (EditsOpt, None), "languages": (LanguagesOpt, None),
    "language": (LanguageOpt, None),
}
"""The options many commands take, each defined once: its Typer type and default, by parameter name."""


PATROL_OPTIONS = ("stream_url", "replay", "api_url", "wiki", "namespace", "include_bots", "title", "category",
                  "edits_in_flight")
"""The flags that configure a patrol, taken by ``claire watch`` and ``claire serve`` (for ``--watch``)."""


def with_settings(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the shared options ``names`` (after its own, in :data:`SHARED_OPTIONS`' order);
    they reach it together as its ``settings`` parameter, a :class:`Settings`."""
    unknown = set(names) - set(SHARED_OPTIONS)
    if unknown:
        raise ValueError(f"no shared option {sorted(unknown)}")

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for name, parameter in signature.parameters.items() if name != "settings"]
        shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
                  for name, (kind, default) in SHARED_OPTIONS.items() if name in names]

        @functools.wraps(command)
        def run_command(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names if name in kwargs}
            return command(*args, settings=Settings(**given), **kwargs)

        run_command.__signature__ = signature.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
        return run_command

    return decorate


def require_api_key(config: Config) -> None:
    """Refuse at once, before anything heavy loads, a run whose OpenAI-compatible endpoint has no
    API key: the LLM client would refuse it the same way, only after the agent and the index."""
    from claire.agent.registry import needs_llm
    from claire.llm.providers import MISSING_API_KEY, needs_api_key

    if needs_api_key(config.llm) and needs_llm(config.agent.system):
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
    existed = path.exists()
    try:  # the permission bits do not tell everything (root, a read-only mount, a full device): try it
        with open(path, "a", encoding="utf-8") as probe:
            probe.write("")
            probe.flush()
            os.fsync(probe.fileno()) if path.is_file() else None
    except OSError as error:
        raise ConfigError(f"{option}: {path} cannot be written ({error.strerror or error})") from None
    finally:
        if not existed and path.is_file() and path.stat().st_size == 0:
            path.unlink()


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
