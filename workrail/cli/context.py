"""What every command handler receives: its parsed arguments, the configuration built
once from the environment and the flags, its output streams, and the application opened
on first use through the composition root."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from returns.result import Failure

from workrail.config import ConfigError, Overrides, WorkrailConfig, load_config
from workrail.core.errors import envelope, retry_of, spec_of, suggestion_of

if TYPE_CHECKING:
    from rich.console import Console

    from workrail.engine.api import Backend, Engine

INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def exit_now(code: int) -> NoReturn:
    """Flush and leave without waiting for other threads: a server's worker thread that is
    blocked reading stdin would otherwise hold the process until Enter is pressed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


class CliExit(Exception):
    """Stop the command with `envelope` reported to the user (never a traceback)."""

    def __init__(self, envelope: dict[str, Any]) -> None:
        super().__init__(envelope.get("message", ""))
        self.envelope = envelope


def port_number(text: str) -> int:
    """An argparse type for `--port`: 0 (any free port) to 65535, else a usage error
    (exit 2) instead of the socket's OverflowError at bind time."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range: a port is 0-65535")
    return port


def overrides_of(args: argparse.Namespace) -> Overrides:
    dirs = [
        *(getattr(args, "global_workflows", None) or ()),
        *(getattr(args, "workflows", None) or ()),
    ]
    libraries = [
        *(getattr(args, "global_library", None) or ()),
        *(getattr(args, "library", None) or ()),
    ]
    return Overrides(
        data_dir=getattr(args, "data_dir", None),
        store_url=getattr(args, "store", None),
        workflow_dirs=tuple(dirs),
        library_dirs=tuple(libraries),
        log_level=getattr(args, "log_level", None),
        log_file=getattr(args, "log_file", None),
    )


OPEN_STORE_HINT = (
    "Check that the store is reachable and that --store (or WORKRAIL_STORE_URL) and "
    "--data-dir name the right one, then run the command again."
)
"""For a person starting a command: the catalogue's default for an unreachable store is
advice to an agent in the middle of a call."""


@dataclass
class Cli:
    args: argparse.Namespace
    env: Mapping[str, str]
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    _config: WorkrailConfig | None = None
    _backend: Backend | None = None
    _engine: Engine | None = None

    @property
    def as_json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def config(self) -> WorkrailConfig:
        if self._config is None:
            loaded = load_config(self.env, overrides_of(self.args))
            if isinstance(loaded, Failure):
                problem: ConfigError = loaded.failure()
                raise CliExit(
                    envelope(
                        "CONFIG_INVALID",
                        f"Bad setting {problem}",
                        "Fix the flag or environment variable and run the command again.",
                    )
                )
            self._config = loaded.unwrap()
        return self._config

    def backend(self) -> Backend:
        """The configured store, opened once; one that cannot be opened stops the command
        with one line that says why. Opening writes nothing."""
        if self._backend is None:
            from workrail.app import open_backend  # only commands that touch sessions pay

            opened = open_backend(self.config)
            if isinstance(opened, Failure):
                problem = opened.failure()
                raise CliExit(envelope(problem.code, problem.message, OPEN_STORE_HINT))
            self._backend = opened.unwrap()
        return self._backend

    def engine(self) -> Engine:
        """The engine over the store (loading, or on first use creating, the keyring)."""
        if self._engine is None:
            from workrail.app import build_engine

            built = build_engine(self.config, self.backend())
            if isinstance(built, Failure):
                problem = built.failure()
                raise CliExit(envelope(problem.code, problem.message))
            self._engine = built.unwrap()
        return self._engine

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
            self._engine = None

    def console(self, *, stderr: bool = False) -> Console:
        """For output to a person (not `workrail mcp`): agent text is made screen-safe."""
        from workrail.cli.terminal import ScreenSafeConsole

        return ScreenSafeConsole(file=self.err if stderr else self.out, highlight=False)

    def write_line(self, text: str, *, stderr: bool = False) -> None:
        """A plain line for a person, screen-safe like everything `console()` prints."""
        from workrail.core.text import screen_safe

        (self.err if stderr else self.out).write(screen_safe(text) + "\n")

    def print_json(self, payload: Any) -> None:
        self.out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")

    def fail(self, error: dict[str, Any]) -> int:
        """The error envelope on stdout (--json) or as readable lines on stderr, ending with
        what to do next; the exit code says whether the input was at fault (2) or the
        operation failed (1). Both come from the catalogue (workrail/core/errors.py)."""
        code = str(error.get("code", "INTERNAL_ERROR"))
        if self.as_json:
            self.print_json({"ok": False, "error": error})
        else:
            from rich.markup import escape

            console = self.console(stderr=True)
            details = error.get("details")
            path = details.get("path") if isinstance(details, dict) else None
            where = f" at {path}" if path else ""
            console.print(
                f"[red]{escape(code)}[/]{escape(where)}: {escape(str(error.get('message', '')))}",
                soft_wrap=True,  # the terminal wraps; a log or pipe gets whole lines
            )
            retry = retry_of(error)
            when = ""
            if retry.kind == "retryable_immediate":
                when = " (retryable at once)"
            elif retry.after_seconds is not None:
                when = f" (retryable after {retry.after_seconds} s)"
            console.print(f"  Next: {suggestion_of(error)}{when}", markup=False, soft_wrap=True)
        return 2 if spec_of(code).input_fault else 1

    def again(self, *words: str) -> str:
        """A follow-up command on the same store: `workrail WORDS`, with the --data-dir or
        --store this command was given (a store named in the environment carries over by
        itself); a password in a --store URL is masked, never printed."""
        import shlex

        from workrail.core.urls import redact_url

        flags: list[str] = []
        if getattr(self.args, "store", None):
            flags += ["--store", redact_url(str(self.args.store))]
        elif getattr(self.args, "data_dir", None):
            flags += ["--data-dir", str(self.config.data_dir)]
        return shlex.join(["workrail", *flags, *words])

    def input_error(self, message: str, suggestion: str) -> int:
        return self.fail(envelope("VALIDATION_ERROR", message, suggestion))


def add_command(
    subparsers: Any,
    common: argparse.ArgumentParser,
    name: str,
    text: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand that takes the global flags: `text` is its line in `--help`, and its
    own help opens with `description` (`text` when not given)."""
    return subparsers.add_parser(  # type: ignore[no-any-return]
        name, parents=[common], help=text, description=description
    )
