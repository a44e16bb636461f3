"""The `workrail` command. Thin: parses arguments, builds the configuration once, calls
the engine through the composition root, and prints — human-friendly by default, JSON
with `--json`. One module per command group.

The global flags (`--data-dir`, `--store`, `--workflows`, `--json`) work before or after
the subcommand.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Final, TextIO

from workrail import __version__

DATA_DIR_ENV: Final = "WORKRAIL_DATA_DIR"
STORE_URL_ENV: Final = "WORKRAIL_STORE_URL"

COMMANDS: Final[dict[str, str]] = {
    "mcp": "servers",
    "serve": "servers",
    "console": "console",
    "demo": "demo",
    "validate": "workflows",
    "workflows": "workflows",
    "export": "bundles",
    "import": "bundles",
    "fence": "fence",
    "sessions": "sessions",
    "checkpoint": "checkpoint",
    "keys": "keys",
    "migrate": "migrate",
}
"""Which module of this package registers each command. Only the module of the command
being run is imported (a server does not load the demo's MCP client, `--version` loads
none); help lists them all. A test checks this table against the modules."""
MODULES: Final = (
    "servers",
    "console",
    "demo",
    "workflows",
    "bundles",
    "fence",
    "sessions",
    "checkpoint",
    "keys",
    "migrate",
)


def _global_flags(*, top_level: bool) -> argparse.ArgumentParser:
    """The flags every command accepts. SUPPRESS keeps a value given before the
    subcommand from being reset by the subcommand's own copy of the flag."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--data-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help=f"data directory (default ${DATA_DIR_ENV} or ~/.workrail/data)",
    )
    flags.add_argument(
        "--store",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=f"session store: postgresql://… (default ${STORE_URL_ENV}, else files in the "
        "data directory)",
    )
    _directories_flag(
        flags,
        "workflows",
        top_level,
        "extra workflow directory (repeatable; after $WORKFLOW_STORAGE_PATH)",
    )
    _directories_flag(
        flags,
        "library",
        top_level,
        "workflow library directory with the bundled workflows' rights: may use the "
        "wr. namespace and replaces a bundled workflow of the same id (repeatable; after "
        "$WORKFLOW_LIBRARY_PATH). With validate: files to check as library files",
    )
    flags.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    return flags


def _directories_flag(
    flags: argparse.ArgumentParser, name: str, top_level: bool, help_text: str
) -> None:
    """A repeatable `--NAME DIR`; given before the subcommand it lands in `global_NAME`,
    so the subcommand's own copy cannot reset it."""
    flags.add_argument(
        f"--{name}",
        dest=f"global_{name}" if top_level else name,
        metavar="DIR",
        action="append",
        default=argparse.SUPPRESS,
        help=help_text,
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `argv`, only the command modules it needs are imported."""
    parser = argparse.ArgumentParser(
        prog="workrail",
        description="Workflow-enforcement MCP server for AI agents.",
        parents=[_global_flags(top_level=True)],
    )
    parser.add_argument("--version", action="version", version=f"workrail {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _global_flags(top_level=False)
    for name in _modules_for(argv):
        importlib.import_module(f"workrail.cli.{name}").register(subparsers, common)
    return parser


def _modules_for(argv: Sequence[str] | None) -> Sequence[str]:
    """The command module the first word naming a command selects; every module when no
    word does (help, a typo: argparse then lists them all), none for `--version`."""
    if argv is None:
        return MODULES
    words = list(argv)
    if "--version" in words and not any(w in COMMANDS for w in words):
        return ()
    for word in words:
        if word in COMMANDS:
            return (COMMANDS[word],)
    return MODULES


def _sessions_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and "sessions" in action.choices:
            found: argparse.ArgumentParser = action.choices["sessions"]
            return found
    return parser


def _mark_argv(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """The sessions parser reads what was typed, to name an unknown flag in its error."""
    _sessions_parser(parser).workrail_argv = argv  # type: ignore[attr-defined]


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(given)
    if not _modules_for(given):
        parser.parse_args(given)  # --version: prints and exits before anything is loaded
    from workrail.cli.context import INTERRUPTED, Cli, CliExit

    _mark_argv(parser, given)
    try:
        args, extras = parser.parse_known_args(given)
    except CliExit as stop:  # a command that reports bad arguments as an envelope
        bare = argparse.Namespace(json="--json" in given)
        return Cli(
            bare, os.environ if env is None else env, out or sys.stdout, err or sys.stderr
        ).fail(stop.envelope)
    if extras:
        if getattr(args, "command", None) == "sessions":
            # Our own envelope, with a did-you-mean, instead of argparse's usage text.
            from workrail.cli import sessions

            cli = Cli(
                args, os.environ if env is None else env, out or sys.stdout, err or sys.stderr
            )
            sub = getattr(args, "sessions_command", None)
            command = f"workrail sessions {sub}" if sub else "workrail sessions"
            return cli.fail(
                sessions.unknown_arguments(_sessions_parser(parser), extras, command=command)
            )
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command is None:
        parser.print_help(out)
        return 0
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.parse_args([args.command, "--help"])
        return 2
    cli = Cli(args, os.environ if env is None else env, out or sys.stdout, err or sys.stderr)
    try:
        return int(handler(cli))
    except CliExit as stop:
        return cli.fail(stop.envelope)
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        # `workrail sessions | head`: the reader left; not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        cli.close()
