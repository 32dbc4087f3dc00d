"""``python -m claire.cli``: the ``claire`` command."""

from claire.cli.app import main

main()
