"""The ``claire`` command line: ``app`` (the Typer application and :func:`main`, the console-script
entry point), ``options`` (what the commands share), one module per group of commands (``check``,
``indexes``, ``evaluate``, ``passages``, ``rates``, ``serve``, ``bench``, ``config_cmd``), and the
terminal's own views (``views``: the live check and the result panels; ``review``: accepting or
rejecting flagged facts). Thin wrappers over the layers below; nothing imports this package.
"""

from claire.cli.app import main

__all__ = ["main"]
