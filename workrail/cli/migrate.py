"""`workrail migrate --from A --to B`: move every session, snapshot and pinned workflow (and
the token keyring) from one store to another — a data directory to PostgreSQL or back.

The copying is the engine's (workrail/engine/migrate.py: each session travels as a bundle,
verified byte for byte on the target); this handler opens both stores through the
composition root and reports. Safe to re-run; nothing is ever deleted from the source.
"""

from __future__ import annotations

import argparse
from typing import Any

from returns.result import Failure

from workrail.app import open_backend_at
from workrail.cli.context import Cli, CliExit
from workrail.core.errors import envelope
from workrail.engine.api import Backend, migrate_stores


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "migrate",
        parents=[common],
        help="move every session, snapshot and pinned workflow to another store",
        description="Copy a store into another: a data directory into PostgreSQL "
        "(--from DIR --to postgresql://…) or back. Verifies everything it moves, skips what "
        "the target already holds, refuses to overwrite anything, never deletes. Each "
        "session keeps its id and its last activity.",
        epilog="Example: workrail migrate --from ~/.workrail/data --to "
        "postgresql://workrail:PASSWORD@db.internal:5432/workrail",
    )
    parser.add_argument(
        "--from",
        dest="source",
        metavar="DIR|URL",
        required=True,
        help="the store to copy from: a data directory (e.g. ~/.workrail/data) or a "
        "postgresql:// URL; it is only read",
    )
    parser.add_argument(
        "--to",
        dest="target",
        metavar="DIR|URL",
        required=True,
        help="the store to copy into: a data directory (created when missing) or a "
        "postgresql:// URL (its tables are created when missing)",
    )
    parser.set_defaults(handler=run_migrate)


def run_migrate(cli: Cli) -> int:
    args = cli.args
    if args.source == args.target:
        return cli.input_error("--from and --to name the same store.", "Name two different stores.")
    insecure = cli.config.allow_insecure_keys
    source = _open(args.source, insecure, existing=True)
    try:
        target = _open(args.target, insecure, existing=False)
    except CliExit:
        source.close()
        raise
    try:
        return _migrate(cli, source, target)
    finally:
        source.close()
        target.close()


def _open(location: str, allow_insecure_keys: bool, *, existing: bool) -> Backend:
    """A store to copy from (`existing`: a data directory must already hold one, so a
    mistyped --from is refused, not read as empty) or into."""
    opened = open_backend_at(location, allow_insecure_keys=allow_insecure_keys, existing=existing)
    if isinstance(opened, Failure):
        problem = opened.failure()
        flag = "--from" if existing else "--to"
        hint = (
            f"Check {flag} (the store to copy {'from' if existing else 'into'}), then run it again."
        )
        raise CliExit(envelope(problem.code, problem.message, hint))
    return opened.unwrap()


def _migrate(cli: Cli, source: Backend, target: Backend) -> int:
    console = cli.console()

    def say(line: str) -> None:
        if not cli.as_json:
            console.print(line, markup=False, highlight=False, soft_wrap=True)

    say(f"Migrating {source.location} -> {target.location}")
    keys, tallies = migrate_stores(source, target, say)
    ok = all(t.refused == 0 and t.failed == 0 for t in tallies.values())
    if cli.as_json:
        cli.print_json(
            {
                "ok": ok,
                "from": source.location,
                "to": target.location,
                "keyring": keys,
                **{name: t.to_json() for name, t in tallies.items()},
            }
        )
    else:
        for name, t in tallies.items():
            say(
                f"{name}: {t.moved} moved, {t.skipped} already there, {t.refused} refused, "
                f"{t.failed} failed"
            )
        say(
            "Done: everything is in the target."
            if ok
            else "Some items were not moved (listed above); fix them and run the same command "
            "again — what was moved is skipped."
        )
    return 0 if ok else 1
