"""``claire config``: the resolved configuration."""

import json
from typing import Annotated

import typer

from claire.cli.options import Settings, console, with_settings


@with_settings("preset", "config_file", "sets")
def config_show(as_json: Annotated[bool, typer.Option("--json")] = False, *, settings: Settings) -> None:
    """Print the resolved configuration (secrets masked)."""
    config = settings.resolve()
    data = config.public_dict()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    from claire.config import describe

    console.print(f"preset  {data.pop('preset')}  [dim]{describe('', 'preset') or ''}[/]")
    for section, values in data.items():
        table = Table(title=f"\\[{section}]", title_justify="left", show_header=False, box=None, padding=(0, 2))
        for key, value in values.items():
            table.add_row(key, json.dumps(value) if not isinstance(value, str) else value, Text(describe(section, key), style="dim"))
        console.print(table)
