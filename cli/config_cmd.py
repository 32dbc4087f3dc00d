"""``claire config``: the resolved configuration."""

import json
from typing import Annotated

import typer

from claire.cli.options import (
    ConfigOpt, PresetOpt, SetOpt,
    console, resolve,
)


def config_show(config_file: ConfigOpt = None, sets: SetOpt = None, preset: PresetOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Print the resolved configuration (secrets masked)."""
    config = resolve(config_file, sets, preset=preset)
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
