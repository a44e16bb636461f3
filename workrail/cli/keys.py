"""`workrail keys rotate`: a fresh signing key for every server on this store."""

from __future__ import annotations

import argparse
from typing import Any

from returns.result import Failure
from rich.markup import escape

from workrail.cli.context import Cli, add_command
from workrail.core.errors import CATALOG, envelope


def run_rotate(cli: Cli) -> int:
    backend = cli.backend()
    rotated = backend.keyring.rotate()
    if isinstance(rotated, Failure):
        problem = rotated.failure()
        # Only keyring and store-reachability codes are on the wire (the catalogue's).
        code = problem.code if problem.code in CATALOG else "KEYRING_IO_ERROR"
        return cli.fail(
            envelope(
                code,
                f"Could not rotate the keyring: {problem.message}",
                "Nothing was changed; fix the store and run the command again.",
            )
        )
    if cli.as_json:
        cli.print_json({"rotated": True, "store": backend.location})
    else:
        cli.console().print(
            f"Rotated the signing key of the store in {escape(backend.location)}: running "
            "servers on it verify tokens signed with the new key at once and sign with it "
            "within 30 seconds, no restart needed. Tokens signed with the previous key stay "
            "valid until the next rotation.",
            soft_wrap=True,
        )
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    keys = add_command(subparsers, common, "keys", "manage the token signing keyring")
    nested = keys.add_subparsers(dest="keys_command", metavar="COMMAND", required=True)
    rotate = add_command(nested, common, "rotate", "make a fresh current key; keep one previous")
    rotate.set_defaults(handler=run_rotate)
