"""The ``claire`` command itself: the Typer application with every command registered under its
name, and :func:`main`, the console-script entry point that turns every
:class:`claire.errors.ClaireError` into a one-line message and exit code 2."""

import os
import sys
import warnings
from typing import Annotated

import typer
from rich.markup import escape

from claire import __version__
from claire.cli import bench, check, config_cmd, estimate_audit, evaluate, indexes, passages, prompts_cmd, resolve, review, serve, sources_cmd, watch, worklist
from claire.cli.options import console, err
from claire.errors import ClaireError, ExitCode, redact
from claire.files import is_text

app = typer.Typer(
    name="claire",
    help="CLAIRE finds facts in Wikipedia that another part of Wikipedia contradicts.",
    epilog="Exit status, the same for every command: 0 done, nothing flagged; 1 done, something flagged "
           "(inconsistent, refuted, a citation not supported); 2 not done (bad input or configuration, an "
           "endpoint or index problem, no verdict); 3 no checkable fact in the text; 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help and usage errors: Rich's help layout costs more than the rest of the start together
    add_help_option=False,  # the root's --help is a plain flag (below): Typer would build a validator for its own on every run
)
index_app = typer.Typer(help="Build, list and inspect search indexes.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print speed figures.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
prompts_app = typer.Typer(help="List the prompt templates and show one filled in.", no_args_is_help=True)
sources_app = typer.Typer(help="Cited sources: how reliable a source is (Perennial sources), reading a cited page.",
                          no_args_is_help=True)
app.add_typer(index_app, name="index")
app.add_typer(bench_app, name="bench")
app.add_typer(config_app, name="config")
app.add_typer(prompts_app, name="prompts")
app.add_typer(sources_app, name="sources")

COMMANDS = [
    (config_app, "show", config_cmd.config_show),
    (prompts_app, "list", prompts_cmd.prompts_list),
    (prompts_app, "show", prompts_cmd.prompts_show),
    (index_app, "build", indexes.index_build),
    (index_app, "update", indexes.index_update),
    (index_app, "export", indexes.index_export),
    (index_app, "list", indexes.index_list),
    (index_app, "info", indexes.index_info),
    (app, "search", indexes.search_command),
    (app, "check", check.check_command),
    (app, "eval", evaluate.eval_command),
    (app, "metrics", evaluate.metrics_command),
    (app, "compare", evaluate.compare_command),
    (app, "sweep", evaluate.sweep_command),
    (app, "extract", passages.extract_command),
    (app, "scan", passages.scan_command),
    (app, "cite", passages.cite_command),
    (app, "resolve", resolve.resolve_command),
    (app, "worklist", worklist.worklist_command),
    (sources_app, "refresh", sources_cmd.sources_refresh),
    (sources_app, "rate", sources_cmd.sources_rate),
    (sources_app, "read", sources_cmd.sources_read),
    (app, "estimate", estimate_audit.estimate_command),
    (app, "audit", estimate_audit.audit_command),
    (app, "review", review.review_command),
    (app, "serve", serve.serve_command),
    (app, "watch", watch.watch_command),
    (bench_app, "llm", bench.bench_llm),
    (bench_app, "prompts", bench.bench_prompts),
    (bench_app, "retrieval", bench.bench_retrieval),
    (bench_app, "retrieval-quality", bench.bench_retrieval_quality),
    (bench_app, "ingest", bench.bench_ingest),
    (bench_app, "eval", bench.bench_eval),
    (bench_app, "serve", bench.bench_serve),
    (bench_app, "cascade", bench.bench_cascade),
    (bench_app, "watch", bench.bench_watch),
    (bench_app, "worklist", bench.bench_worklist),
    (bench_app, "resolve", bench.bench_resolve),
    (bench_app, "startup", bench.bench_startup),
    (bench_app, "languages", bench.bench_languages),
]
"""Every command: the application it belongs to, its name and the function that runs it."""

for group, name, function in COMMANDS:
    group.command(name)(function)


def version_callback(value: bool) -> None:
    """``--version``: print the version and stop."""
    if value:
        console.print(f"claire {__version__}")
        raise typer.Exit()


def help_callback(context: typer.Context, value: bool) -> None:
    """``--help``: print the command list and stop."""
    if value:
        typer.echo(context.get_help())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version.")] = False,
    show_help: Annotated[bool, typer.Option("--help", callback=help_callback, is_eager=True, help="Show this message and exit.")] = False,
) -> None:
    """CLAIRE: corpus-level inconsistency detection with an LLM agent."""


def _show_config_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    from claire.config import ConfigWarning  # loaded by now: only the configuration warns this way

    if issubclass(category, ConfigWarning):
        err.print(f"[yellow]warning:[/] {escape(redact(str(message)))}", highlight=False)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def _usage_error(error: Exception) -> bool:
    """Say a command-line usage error (an unknown option, a missing argument) as every other error
    is said: the usage line, where to find help, then ``error: …``. True when ``error`` was one (the
    CLI library's errors carry a message and an exit code, and a context for usage errors)."""
    message = getattr(error, "format_message", None)
    if not callable(message) or not isinstance(getattr(error, "exit_code", None), int):
        return False
    context = getattr(error, "ctx", None)
    if context is not None:
        err.print(context.get_usage(), markup=False, highlight=False)
        err.print(f"Try '{context.command_path} --help' for help.\n", markup=False, highlight=False)
    err.print(f"[bold red]error:[/] {escape(str(message()))}", highlight=False)
    return True


def main() -> None:
    """Console-script entry point: clear messages instead of tracebacks."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.showwarning = _show_config_warning
    for number, argument in enumerate(sys.argv[1:], start=1):
        if not is_text(argument):  # bytes that are not UTF-8 arrive as lone surrogates
            err.print(f"[bold red]error:[/] argument {number} is not UTF-8 text "
                      f"({escape(argument.encode('utf-8', 'replace').decode('utf-8'))}); give text in UTF-8")
            sys.exit(2)
    try:
        code = app(standalone_mode=False, prog_name="claire")  # the CLI library's own errors come back here, said as CLAIRE's are
        sys.exit(code if isinstance(code, int) else ExitCode.OK)
    except typer.Abort:
        err.print("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
    except ClaireError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)  # str() is redacted
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as error:  # a bug: one line for the person, the traceback on request
        if _usage_error(error):
            sys.exit(error.exit_code)  # type: ignore[attr-defined]
        if os.environ.get("CLAIRE_DEBUG"):
            raise
        err.print(f"[bold red]internal error:[/] {escape(redact(f'{type(error).__name__}: {error}'))} "
                  "(set CLAIRE_DEBUG=1 for the traceback, and please report it)", highlight=False)
        sys.exit(2)
