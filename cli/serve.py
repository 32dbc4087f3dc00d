"""``claire serve``: the web app and REST API for editors."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from claire.cli.options import PATROL_OPTIONS, ConcurrencyOpt, Settings, SystemOpt, err, with_settings


@with_settings(*PATROL_OPTIONS, "index", "languages", "language", "preset", "model", "base_url", "no_cache", "config_file", "sets")
def serve_command(
    host: Annotated[Optional[str], typer.Option("--host", help="Address to listen on (a non-loopback one needs --token). [default: 127.0.0.1; env: CLAIRE_SERVE_HOST]", show_default=False)] = None,
    port: Annotated[Optional[int], typer.Option("--port", help="[default: 8000; env: CLAIRE_SERVE_PORT]", show_default=False)] = None,
    token: Annotated[Optional[str], typer.Option("--token", help="Require 'Authorization: Bearer TOKEN' on every API call. [env: CLAIRE_SERVE_TOKEN]")] = None,
    concurrency: ConcurrencyOpt = None,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Where jobs and reviews are kept (default: web/ in the user data folder; env: CLAIRE_SERVE_DATA_DIR).")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option("--cors-origin", help="Another page origin allowed to call the API (repeatable; env: CLAIRE_SERVE_CORS_ORIGINS as a JSON list).")] = None,
    allowed_host: Annotated[Optional[list[str]], typer.Option("--allowed-host", help="Another name clients may reach the server by (the Host header; repeatable; env: CLAIRE_SERVE_ALLOWED_HOSTS as a JSON list). Requests naming any other host are refused, which stops DNS rebinding.")] = None,
    max_body: Annotated[Optional[int], typer.Option("--max-body", help="Largest request body in bytes. [default: 1000000; env: CLAIRE_SERVE_MAX_BODY_BYTES]", show_default=False)] = None,
    system: SystemOpt = None,
    watch: Annotated[bool, typer.Option("--watch", help="Also patrol a live wiki's new edits (the Patrol view); configured as for `claire watch`. [env: CLAIRE_SERVE_WATCH]")] = False,
    worklist: Annotated[Optional[Path], typer.Option("--worklist", help="A run directory of `claire worklist` to show in the Worklist tab (decisions recorded there are kept with it). [env: CLAIRE_SERVE_WORKLIST]")] = None,
    *,
    settings: Settings,
) -> None:
    """The web app and REST API for editors: paste an article, see flagged facts, review them."""
    from claire.web.settings import ServeSettings
    from claire.web.serve import serve

    config = settings.batch(system, concurrency)
    serving = ServeSettings.resolve(host=host, port=port, token=token or None, concurrency=config.eval.concurrency,
                                    data_dir=data_dir, cors_origins=cors_origin or None, max_body_bytes=max_body,
                                    allowed_hosts=allowed_host or None, watch=watch or None, worklist=worklist)
    serve(config, serving, console=err)
