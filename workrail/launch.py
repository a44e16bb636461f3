"""The `workrail` program's entry point, kept apart from the command package so that a
Ctrl-C while the program is still importing ends it quietly too."""

from __future__ import annotations

import os
import sys

INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def exit_now(code: int) -> None:
    """Flush and leave without waiting for other threads: a server's worker thread that is
    blocked reading stdin would otherwise hold the process until Enter is pressed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def run() -> None:
    """Run `workrail` with the process's arguments and exit with its status; after Ctrl-C,
    at once and without a traceback."""
    try:
        from workrail.cli import main

        code = main()
    except KeyboardInterrupt:
        code = INTERRUPTED
    if code == INTERRUPTED:
        exit_now(code)
    sys.exit(code)
