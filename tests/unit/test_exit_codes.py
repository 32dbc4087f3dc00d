"""One meaning per exit status, for every command."""

from __future__ import annotations

from claire.errors import ClaireError, ExitCode, NothingToCheck


def test_one_meaning_per_exit_status():
    assert (ExitCode.OK, ExitCode.FLAGGED, ExitCode.ERROR, ExitCode.NOTHING_TO_CHECK) == (0, 1, 2, 3)
    assert ClaireError.exit_code == ExitCode.ERROR and NothingToCheck("x").exit_code == ExitCode.NOTHING_TO_CHECK
