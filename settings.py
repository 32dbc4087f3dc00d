"""Every setting of CLAIRE, one pydantic model per section (``llm``, ``retrieval``, ``agent``, ...),
each field with its type, limits and description: what ``claire config show`` and the README's
configuration reference read. How a configuration is resolved from defaults, a preset,
``claire.toml``, the environment and flags lives in :mod:`claire.config`. A leaf module: it imports
no CLAIRE module but ``errors`` when imported; the settings that name an entry of a registry
(``agent.system``, ``agent.task``, ``agent.tools``) are checked by that registry's check, which the
registry registers here (:func:`register_name_check`), and the registries are loaded the first time
such a name is validated."""

from __future__ import annotations

import errno
import os
import re
import shutil
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import platformdirs
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator

from claire.errors import redact, register_secret
from claire.languages import checked_code, language_list

NAME_CHECKS: dict[str, Callable[[Any], Any]] = {}
"""For each setting that names an entry of a registry (``agent.system``, ``agent.task``,
``agent.tools``), the registry's check: it takes the value and returns it (normalised) or raises
ValueError saying what is allowed. Registered by the registries themselves, so this module names no
system, task or tool."""


def register_name_check(setting: str, check: Callable[[Any], Any]) -> None:
    """Have ``check`` validate the setting ``section.field`` whenever a configuration is validated."""
    NAME_CHECKS[setting] = check


def _checked_name(setting: str, value: Any) -> Any:
    """``value`` checked by its registry's check. The registries (names only, a few milliseconds to
    import) are loaded here the first time a name is validated, so every configuration's names are
    checked, whichever module was imported first; nothing is loaded by importing this module."""
    if setting not in NAME_CHECKS:
        import_module("claire.agent.registry")  # registers the checks of agent.system, agent.task and agent.tools
    check = NAME_CHECKS.get(setting)
    return value if check is None else check(value)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# settings whose values are never echoed in error messages
SECRET_FIELDS = {"api_key", "api_key_env", "qdrant_api_key"}


def cache_dir() -> Path:
    """Where CLAIRE keeps its LLM response cache unless told otherwise (safe to delete)."""
    return Path(os.environ.get("CLAIRE_CACHE_DIR") or platformdirs.user_cache_dir("claire"))


def data_dir() -> Path:
    """Where CLAIRE keeps what must outlive a cache clean-up: embedded indexes and saved
    interactive checks (``CLAIRE_DATA_DIR``, else the platform's user data folder)."""
    return Path(os.environ.get("CLAIRE_DATA_DIR") or platformdirs.user_data_dir("claire"))


def default_index_root() -> Path:
    """``data_dir()/indexes``. Indexes used to live in ``cache_dir()/indexes``: while the data
    folder has no ``indexes`` yet, an old one is moved there once (renamed when both are on one
    file system, else copied and then deleted) and one line on stderr says so. Nothing is deleted
    before its copy is complete; if the move fails, the old folder is used as it is."""
    root = data_dir() / "indexes"
    legacy = cache_dir() / "indexes"
    if os.path.lexists(root) or not legacy.is_dir() or os.path.abspath(legacy) == os.path.abspath(root):
        return root  # both present: the data folder's wins and the old one is left alone
    partial = root.with_name(f".indexes-moving-{os.getpid()}")
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(legacy, root)  # atomic on one file system
        except OSError as error:
            if error.errno != errno.EXDEV:
                raise
            shutil.copytree(legacy, partial, symlinks=True)
            os.replace(partial, root)
            shutil.rmtree(legacy, ignore_errors=True)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        if root.is_dir():  # another process got there first; what is left in the cache stays there
            return root
        print(f"claire: could not move the indexes from {legacy} to {root} ({error}); using them where they are",
              file=sys.stderr)
        return legacy
    print(f"claire: moved the indexes from {legacy} to {root} (the cache folder is for data that may be deleted)",
          file=sys.stderr)
    return root


def http_url(value: str) -> str:
    """``value`` if it is an http(s) URL with a host and a numeric port; a ValueError saying what is wrong otherwise."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{redact(value)!r} is not an http(s) URL like http://127.0.0.1:8000/v1")
    try:
        parts.port
    except ValueError:
        raise ValueError(f"{redact(value)!r} has a port that is not a number from 0 to 65535") from None
    return value.strip()



HttpUrlText = Annotated[str, AfterValidator(http_url)]
"""A setting that holds an http(s) URL (checked by :func:`http_url`)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


PAPER_MODEL = "gpt-4o-2024-11-20"
"""The model the paper's figures were measured with (GPT-4o, this dated snapshot, at temperature 0)."""


class LLMConfig(_Section):
    """Which LLM to call and how: the endpoint, the model, sampling, retries, the cache."""
    provider: Literal["openai", "azure", "local"] = Field("openai", description="openai (any OpenAI-compatible endpoint), azure, or local (a GGUF file in-process); a provider prefix in llm.model wins")
    model: str = Field(PAPER_MODEL, description="model name (default: the paper's snapshot of GPT-4o); provider-qualified "
                       "(anthropic:..., ollama:...) for LangChain's other providers")
    base_url: HttpUrlText | None = Field(None, description="OpenAI-compatible endpoint (vLLM, llama.cpp server, LM Studio, Ollama /v1); also OPENAI_BASE_URL")
    api_key: SecretStr | None = Field(None, description="the key itself (prefer an environment variable)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the key")
    azure_api_version: str = Field("2024-10-21", description="Azure OpenAI API version")
    local_model_path: Path | None = Field(None, description="the .gguf file for the local provider")
    local_n_ctx: int = Field(8192, ge=512, description="context window of the local model (tokens)")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int = Field(1500, ge=1, description="longest answer per call (tokens); the context budget keeps room for it")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds to wait for one answer (at most an hour)")
    max_attempts: int = Field(6, ge=1, description="tries per call on 429, 5xx, timeouts, connection errors and garbled answers")
    retry_base_wait: float = Field(0.5, ge=0, le=600, description="first backoff between tries (seconds), growing exponentially with jitter")
    retry_max_wait: float = Field(30.0, ge=0, le=3600, description="longest backoff between tries (seconds); a server's Retry-After is honoured up to 120 s")
    stream: bool = Field(False, description="receive answers as a stream of chunks")
    max_concurrency: int = Field(8, ge=1, description="LLM calls in flight at once, shared by everything one command runs")
    structured: Literal["auto", "off"] = Field(
        "off", description="auto: every answer of fixed shape (the verifier's score, the NLI label, RankGPT's order, "
                            "extracted facts, the citation verdict, queries, the resolver's answer) is asked for as JSON "
                            "and its schema sent (response_format), which the endpoint turns into constrained decoding; "
                            "an endpoint that refuses schemas is asked without one. off: tagged text, the paper's "
                            "format (the paper preset's; the practical preset's is auto)")
    tool_calling: Literal["native", "text"] = Field("native", description="native (the endpoint's tool calls) or text (name(argument) in the answer)")
    context_window: int | None = Field(
        None, ge=1024,
        description="tokens the model can take (prompt + answer); unset: the model's LangChain profile, else a "
                    "known default (8192 for models nobody knows; llm.local_n_ctx for the local provider)",
    )
    cache: bool = Field(True, description="keep answers in the SQLite response cache")
    refresh_cache: bool = Field(False, description="ignore cached answers and store fresh ones")
    cache_path: Path | None = Field(None, description="the response cache file (default: llm-cache.sqlite in the cache directory)")
    record: Path | None = Field(
        None, description="append every call to this JSONL cassette: the request as fingerprints (no prompt text, no "
                          "key) and the model's raw answer, for replay tests (claire.testing.cassette)",
    )
    prompt_header: bool = Field(
        False, description="for test servers only: name each request's prompt template in an X-Claire-Prompt header "
                           "(claire.testing reads it; off, no CLAIRE-specific header reaches any endpoint)",
    )

    @model_validator(mode="before")
    @classmethod
    def _credentials_leave_the_url(cls, data: Any) -> Any:
        """``http://user:KEY@host/v1`` becomes ``http://host/v1`` with KEY as the API key (unless one
        is set): HTTP clients refuse a URL with credentials beside an Authorization header."""
        if not isinstance(data, dict) or not isinstance(data.get("base_url"), str):
            return data
        parts = urlsplit(data["base_url"])
        if parts.username is None and parts.password is None:
            return data
        key = parts.password if parts.password is not None else parts.username
        register_secret(key)
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:
            return data  # the URL check names the bad port
        netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
        data = {**data, "base_url": urlunsplit(parts._replace(netloc=netloc))}
        if key and data.get("api_key") is None:
            data["api_key"] = key
        return data


    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            register_secret(value)  # most likely a pasted key: never echo it
            raise ValueError(
                "must name an environment variable (like OPENAI_API_KEY), not hold the key itself; "
                "put the key in that variable, or in llm.api_key"
            )
        return value

    def resolved_cache_path(self) -> Path:
        """The LLM cache file (``llm.cache_path``, else llm-cache.sqlite in the cache folder)."""
        return self.cache_path or cache_dir() / "llm-cache.sqlite"

    def resolved_api_key(self) -> str | None:
        """The API key: ``llm.api_key``, else the variable ``llm.api_key_env`` names."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get(self.api_key_env) or None


class RetrievalConfig(_Section):
    """Where and how passages are retrieved: the index, the search mode, reranking, a Qdrant server."""
    backend: Literal["qdrant", "wikichat"] = Field("qdrant", description="qdrant (an index) or wikichat (the WikiChat search API)")
    index: str = Field("demo", description="index name")
    path: Path | None = Field(None, description="folder holding embedded indexes (default: indexes in the user data directory)")
    url: HttpUrlText | None = Field(None, description="Qdrant server URL instead of the embedded engine")
    qdrant_api_key: SecretStr | None = Field(None, description="API key of the Qdrant server")
    # None: query with the embedder the index was built with (new indexes default to minilm).
    embedder: str | None = Field(None, description="query embedder; unset: the one the index was built with")
    mode: Literal["hybrid", "dense", "bm25"] = Field(
        "dense", description="dense (embeddings only, as the paper), hybrid (dense + BM25 fused) or bm25")
    query_runtime: Literal["auto", "onnx", "torch"] = Field(
        "auto", description="what embeds search queries: onnx (the embedder exported to ONNX Runtime; ~3x faster a "
                            "query on a CPU and off the interpreter lock), torch, or auto (onnx when the export works)",
    )
    candidates: int = Field(50, ge=1, description="passages retrieved before reranking")
    language: str = Field("en", description="the language edition of the facts checked (the index's own, for blocks that "
                                            "name none)")
    languages: list[str] = Field(
        default_factory=list, description="other language editions the research also searches (e.g. fr,de; the "
                                          "counterpart of the fact's article first); on the demo index, the "
                                          "multilingual demo is used")
    rerank: bool = Field(True, description="rerank search results with the LLM (RankGPT sliding window)")
    rerank_window: int = Field(20, ge=2, description="passages the reranker sees at once")
    rerank_step: int = Field(10, ge=1, description="how far the reranking window slides")
    rerank_max_chars: int = Field(600, ge=50, description="characters of each passage shown to the reranker")
    wikichat_url: HttpUrlText = Field("https://search.genie.stanford.edu/wikipedia_20250320", description="the WikiChat search endpoint")
    lock_timeout: float = Field(600.0, ge=0, le=86400, description="seconds a build, --replace or delete of an embedded index waits for another one to finish")
    # collections made by `index build --from-dump` on a Qdrant server (retrieval.url)
    server_shards: int = Field(1, ge=1, description="shards of a collection a dump build creates on a Qdrant server")
    server_on_disk: bool = Field(True, description="keep a server collection's vectors and payloads on disk")
    server_int8: bool = Field(True, description="int8 scalar quantization of a server collection (kept in RAM, rescored from disk)")
    upload_parallel: int = Field(4, ge=1, description="concurrent upload requests per batch to a Qdrant server")
    edge_int8: bool = Field(False, description="int8 copies of the dense vectors of an embedded index a dump build creates (searches rescore with the floats)")

    @field_validator("language", mode="before")
    @classmethod
    def _one_code(cls, value: Any) -> Any:
        return checked_code(value) if isinstance(value, str) else value

    @field_validator("languages", mode="before")
    @classmethod
    def _codes(cls, value: Any) -> Any:
        return language_list(value)

    @model_validator(mode="after")
    def _step_fits_window(self) -> "RetrievalConfig":
        if self.rerank_step > self.rerank_window:
            raise ValueError(f"rerank_step ({self.rerank_step}) must not exceed rerank_window ({self.rerank_window})")
        return self

    def index_root(self) -> Path:
        """``retrieval.path``, else ``indexes`` in the user data folder (see :func:`default_index_root`)."""
        return self.path or default_index_root()


class AgentConfig(_Section):
    """The system that answers and how the CLAIRE agent researches."""
    system: str = Field(
        "claire", description="claire (the agent), rav (retrieve and verify), nli (the NLI pipeline) or cascade "
                              "(a baseline first, claire only for facts its score does not clear)")
    task: str = Field("wikicollide", description="what the systems answer: wikicollide (an inconsistency score), feverous (a three-way label with cited element ids) or citations (whether a cited source supports a claim)")
    max_steps: int = Field(10, ge=1, le=100, description="research steps per claim")
    docs_per_query: int = Field(15, ge=1, le=100, description="passages per search")
    clarify_k: int = Field(10, ge=1, le=100, description="passages clarify_entity reads")
    tools: list[str] | None = Field(
        None, validate_default=True,
        description="enabled tools, by name (unset: every tool; search and report_inconsistency are always on)")
    stop_on_report: bool = Field(
        True, description="end a batch run's research at the first reported inconsistency, as the paper's released "
                          "traces do (an interactive check with review goes on after each answer); false: keep "
                          "looking for contradictions elsewhere after a report",
    )
    snippet_chars: int = Field(
        0, ge=0, le=100_000,
        description="characters of each new passage the controller is shown after a search; 0 shows it whole, as the "
                    "paper does (the verifier always reads passages whole)",
    )
    finish_action: bool = Field(
        False, description="offer the finish() action, the controller's way to stop early (the practical preset's; "
                           "WikiCollide's own traces end with such an action, give_up, but the paper's controller offers "
                           "none: its research ends by the step budget or by a report)",
    )
    parallel_actions: bool = Field(
        False, description="several actions in one answer each run as a step (the practical preset's); off, the "
                           "paper's one action a step: OpenAI's own endpoint is asked for one tool call at most, and "
                           "from any endpoint only an answer's first action runs",
    )
    thoughts: bool = Field(
        True, description="the controller thinks about what it has gathered before each action, and its thoughts stay in "
                          "the history it sees next (the paper's ReAct thoughts; the practical preset turns them off to "
                          "save tokens)",
    )
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="inconsistency score above which the verdict is inconsistent (exactly the threshold is not flagged)")
    report: bool | None = Field(None, description="write the two-sided report; unset: on for claire check, off in batch runs")  # the two-sided report; None: on for `claire check`, off in batch runs
    review: bool = Field(False, description="pause for a person to review reported inconsistencies")
    checkpoints: Path | None = Field(
        None, description="SQLite file where interactive checks save their progress so `claire check --resume THREAD` "
                          "can go on after an interruption; unset: checkpoints.sqlite in the user data directory",
    )
    keep_observations: int = Field(
        2, ge=0, le=100,
        description="latest controller observations always kept whole when older ones are condensed to fit the context window",
    )
    max_fact_chars: int = Field(2000, ge=50, description="longer facts are refused: `claire scan` is for passages")
    claim_timeout: float = Field(3600.0, gt=0, le=7 * 86400, description="seconds one claim's check may take in all, after "
                                 "which it fails with that reason (a system that never answers cannot stop a run)")
    max_answer_chars: int = Field(100_000, ge=1000, le=10_000_000, description="longest text of a system's answer kept "
                                  "(explanation, each passage, each trace step); longer ones are cut, marked")
    calibration: Path | None = Field(
        None, description="a calibrator.json (written by `claire metrics --calibrate-from`), or a validation run directory "
                          "to fit one from: answers then carry the calibrated probability of their score",
    )
    cascade_first: Literal["rav", "nli"] = Field("rav", description="the cascade's cheap first pass")
    cascade_cut: float = Field(
        0.2, ge=0.0, le=1.0,
        description="facts whose first-pass score (for nli, the share of REFUTES passages) is below this keep it; "
                    "the rest go to claire (choose it on validation: eval --cut-from)",
    )
    cascade_recall: float = Field(
        0.95, gt=0.0, le=1.0, description="with eval --cut-from: the share of inconsistent facts the cut must send to claire")

    @field_validator("tools", mode="before")
    @classmethod
    def _split_tools(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("system", "task", "tools")
    @classmethod
    def _named_in_its_registry(cls, value: Any, info: ValidationInfo) -> Any:
        return _checked_name(f"agent.{info.field_name}", value)


class BaselineConfig(_Section):
    """The settings of the two baselines."""
    k: int = Field(20, ge=1, le=200, description="passages the baselines retrieve")
    nli_threshold: float = Field(1, ge=0, description="REFUTES passages from which nli says inconsistent")  # a number of REFUTES passages


class PromptsConfig(_Section):
    # "default" (the built-in templates) or a folder of *.j2 files that override them by name.
    """Which prompt templates are rendered."""
    set: str = Field("default", description="default, or a folder of *.j2 files overriding templates by name")
    # template name -> variant name, e.g. {"verifier": "strict"} renders verifier.strict.j2.
    variants: dict[str, str] = Field(default_factory=dict, description="template name -> variant name (verifier = \"strict\" renders verifier.strict.j2)")
    max_value_chars: int = Field(6000, ge=200, le=200_000, description="the most characters of one inserted passage, context or fact that a prompt shows")


class EvalConfig(_Section):
    """Batch evaluation settings."""
    concurrency: int = Field(4, ge=1, le=256, description="claims evaluated at once")
    max_error_share: float = Field(0.2, ge=0.0, le=1.0, description="`claire eval` exits 2 when more than this share of the claims ended in an error")
    engine: Literal["local", "ray"] = Field("local", description="where the corpus run's facts are extracted and "
                                            "checked: local (this process) or ray (a pool of Ray actors: pip install "
                                            "-e \".[ray]\")")
    ray_address: str | None = Field(None, description="the Ray cluster to join (auto, or ray://HOST:10001); unset: "
                                                      "start a local Ray of eval.ray_workers CPUs")
    ray_workers: int = Field(2, ge=1, le=10_000, description="Ray actors, each holding the configured system (one CPU each)")


class CiteConfig(_Section):
    """``claire cite`` and the citations eval: is a claim supported by its cited source?"""

    index: str = Field("sources-demo", description="the sources index; sources-demo is built from the bundled examples")
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="support score at or above which a source supports the claim")
    partial_support: float = Field(0.2, ge=0.0, le=1.0, description="support score from which, below cite.threshold, a "
                                   "source partially supports the claim (some of it stated, the rest missing)")
    decision: Literal["ranking", "threshold"] = Field(
        "ranking", description="ranking (Side's rule: the citation holds when the verifier ranks the original, "
                               "retrieved or not, first among the sources judged and its score reaches cite.threshold) "
                               "or threshold (the original's score reaches cite.threshold)",
    )
    search_k: int = Field(30, ge=1, le=500, description="passages retrieved per search query")
    candidates: int = Field(8, ge=0, le=100, description="candidate sources (documents) verified besides the original")
    passages_per_source: int = Field(3, ge=1, le=20, description="a source's best passages shown to the verifier")
    suggestions: int = Field(3, ge=1, le=50, description="better sources listed at most")
    expand_queries: bool = Field(False, description="let the LLM write extra search queries (generative query expansion)")
    max_queries: int = Field(3, ge=1, le=10, description="expansion queries at most")
    passage_words: int = Field(100, ge=20, le=2000, description="words per passage a source is split into")
    context_chars: int = Field(600, ge=0, description="how much of the claim's context joins the search query")
    max_source_bytes: int = Field(5_000_000, ge=1000, description="largest cited source read, in bytes")


class WatchConfig(_Section):
    """``claire watch`` and ``claire serve --watch``: which live edits to check, from where."""

    stream_url: HttpUrlText = Field("https://stream.wikimedia.org/v2/stream/recentchange",
                            description="the EventStreams recentchange stream (server-sent events) to follow")
    replay: Path | None = Field(None, description="read recorded events (JSONL in the stream's shape) instead of the stream")
    api_url: HttpUrlText | None = Field(None, description="the MediaWiki Action API for every wiki (default: each event's "
                                                  "server_url + server_script_path + /api.php)")
    wikis: list[str] = Field(default_factory=lambda: ["enwiki"], description="wikis whose edits are checked (the events' wiki field)")
    namespaces: list[int] = Field(default_factory=lambda: [0], description="namespaces checked (0: articles)")
    include_bots: bool = Field(False, description="check bot edits too")
    titles: list[str] = Field(default_factory=list, description="only titles matching one of these regular expressions")
    categories: list[str] = Field(default_factory=list, description="only pages in one of these categories")
    edits_in_flight: int = Field(4, ge=1, le=256, description="edits checked at once")
    index_every: float = Field(30.0, ge=0, description="seconds between stores of edited pages in the index (one built from a dump)")
    user_agent: str | None = Field(None, description="the User-Agent sent to Wikimedia (add your contact, as its policy asks)")
    max_edit_chars: int = Field(20_000, ge=100, le=1_000_000, description="characters of an edit's added or changed "
                                "text that are checked (the rest is left out, and the patrol item says so)")
    max_facts_per_edit: int = Field(20, ge=1, le=1000, description="facts checked per edit (the rest are left out, "
                                    "and the patrol item says so)")
    retry_wait: float = Field(60.0, ge=0.1, le=3600, description="seconds before an edit whose wiki API or LLM "
                              "endpoint failed (5xx, 429, timeouts) is tried again; doubled each time, at most an hour")
    retry_tries: int = Field(8, ge=1, le=100, description="times such an edit is tried again before it ends as failed "
                             "(with its reason; `claire watch --retry-failed` queues it once more)")



class ResolveConfig(_Section):
    """Which side of a contradiction is right (``claire resolve``, the ``sides`` task): reading each
    side's cited sources and rating where they come from."""

    sources: Path | None = Field(None, description="a web-docs file (JSONL: url, title?, text, date?) whose pages are read "
                                                   "instead of fetching them")
    fetch: bool = Field(True, description="fetch cited pages that no sources file or cache holds, over HTTP")
    cache_dir: Path | None = Field(None, description="where fetched pages are kept, with the date fetched (default: "
                                                     "sources/ in the cache directory)")
    allow_private: bool = Field(False, description="fetch from private, loopback and link-local addresses too")
    fetch_timeout: float = Field(15.0, gt=0, le=300, description="seconds one fetch may take in all")
    max_bytes: int = Field(3_000_000, ge=1000, le=100_000_000, description="largest cited page read, in bytes")
    max_redirects: int = Field(5, ge=0, le=20, description="redirects a fetch follows")
    user_agent: str | None = Field(None, description="the User-Agent sent when cited pages are fetched (add your contact, "
                                                     "as sites ask of crawlers); unset: CLAIRE's own, with no contact")
    cache_days: float = Field(30.0, gt=0, description="days a fetched page is kept before it is fetched again")
    max_sources: int = Field(4, ge=1, le=50, description="cited sources read per side")
    reliability: Path | None = Field(None, description="a Perennial sources snapshot (JSON) instead of the shipped one "
                                                       "(`claire sources refresh` writes one)")
    agreement_search: bool = Field(True, description="search the index once per side's value for other passages that give it")
    explain: bool = Field(True, description="let the LLM write the decision's explanation and recognise 'both can stand'")
    tier_weights: dict[str, float] = Field(
        default_factory=lambda: {"generally reliable": 1.0, "no consensus": 0.5, "not listed": 0.4,
                                 "generally unreliable": 0.15, "deprecated": 0.0, "blacklisted": 0.0},
        description="the rule: what a source that states a side's value is worth, by its Perennial tier")
    min_standing: float = Field(0.3, ge=0, description="the rule: the weight a source needs to verify a side")
    more_sources: float = Field(0.15, ge=0, description="the rule: each further distinct site stating the value (two count)")
    agreement: float = Field(0.1, ge=0, description="the rule: each other independent source giving the value (three count)")
    recency: float = Field(0.3, ge=0, description="the rule: the newer verified side, for facts that change over time")
    margin: float = Field(0.1, ge=0, description="the rule: below this difference in strength it cannot tell")


PRESETS: dict[str, dict[str, Any]] = {
    # The paper's method: the built-in defaults themselves (only the embedder differs offline:
    # MiniLM instead of mGTE, which needs a model hub; `--embedder mgte` at index build time).
    "paper": {},
    # This project's additions: hybrid dense + BM25 search (for small embedders), the controller
    # reads 400-character snippets, may finish() early, thinks without writing its thoughts down and
    # keeps looking after a report, the verifier forgives
    # differences of rounding, spelling and calendar, and the prompts are the project's own
    # (notes of at most five sentences, extraction that skips opinions and definitions). Their
    # cost is measured (evals/sweeps/fidelity.yaml with the oracle model); their accuracy with a
    # real model is not.
    "practical": {
        "llm": {"structured": "auto"},
        "retrieval": {"mode": "hybrid"},
        "agent": {"stop_on_report": False, "snippet_chars": 400, "finish_action": True, "thoughts": False,
                  "parallel_actions": True},
        "prompts": {"variants": {"verifier": "lenient", "controller": "practical", "explain": "practical",
                                 "clarify_entity": "practical", "fact_extraction": "practical"}},
    },
}
"""Named starting points a configuration is resolved from (``--preset``, ``preset = ...`` in
claire.toml, or ``CLAIRE_PRESET``): the preset's settings sit just above the built-in defaults,
so claire.toml, the environment and flags still override each of them."""

