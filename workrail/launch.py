"""The `workrail` program's entry point, kept apart from the command package so that a
Ctrl-C while the program is still importing ends it quietly too."""

from __future__ import annotations

import os
import sys


def run() -> None:
    """Run `workrail` with the process's arguments and exit with its status; after Ctrl-C,
    at once and without a traceback."""
    try:
        from workrail.cli import main
        from workrail.cli.context import INTERRUPTED, exit_now
    except KeyboardInterrupt:
        os._exit(130)
    try:
        code = main()
    except KeyboardInterrupt:
        code = INTERRUPTED
    if code == INTERRUPTED:
        exit_now(code)
    sys.exit(code)
