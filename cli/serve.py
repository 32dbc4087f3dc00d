"""``claire serve``: the web app and REST API for editors."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from claire.cli.options import PATROL_OPTIONS, ConcurrencyOpt, Settings, SystemOpt, err, with_settings


@with_settings(*PATROL_OPTIONS, "index", "preset", "model", "base_url", "no_cache", "config_file", "sets")
def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (a non-loopback one needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8000,
    token: Annotated[Optional[str], typer.Option("--token", envvar="CLAIRE_SERVE_TOKEN", help="Require 'Authorization: Bearer TOKEN' on every API call.")] = None,
    concurrency: ConcurrencyOpt = None,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Where jobs and reviews are kept (default: web/ in the user data folder).")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option("--cors-origin", help="Another page origin allowed to call the API (repeatable).")] = None,
    allowed_host: Annotated[Optional[list[str]], typer.Option("--allowed-host", help="Another name clients may reach the server by (the Host header; repeatable). Requests naming any other host are refused, which stops DNS rebinding.")] = None,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body in bytes.")] = 1_000_000,
    system: SystemOpt = None,
    watch: Annotated[bool, typer.Option("--watch", help="Also patrol a live wiki's new edits (the Patrol view); configured as for `claire watch`.")] = False,
    *,
    settings: Settings,
) -> None:
    """The web app and REST API for editors: paste an article, see flagged facts, review them."""
    from claire.web.settings import ServeSettings
    from claire.web.serve import serve

    config = settings.batch(system, concurrency)
    serving = ServeSettings(host=host, port=port, token=token or None, concurrency=config.eval.concurrency,
                             data_dir=data_dir, cors_origins=cors_origin or [], max_body_bytes=max_body,
                             allowed_hosts=allowed_host or [], watch=watch)
    serve(config, serving, console=err)
