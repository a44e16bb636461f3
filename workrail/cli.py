"""The `workrail` command. Thin: parses arguments, calls the engine or the store, prints.

Human-friendly output by default (rich), `--json` for scripts. Global `--data-dir` and
`--workflows` are applied to the environment before any subcommand runs, so every
subcommand (and the engine's configuration) sees the same data directory and sources.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.result import Failure
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from workrail import __version__
from workrail.engine.sessions_view import (
    UNHEALTHY_BANNER,
    NodeView,
    RunView,
    SessionView,
    list_sessions,
    load_session,
    mtime_activity,
)
from workrail.store.local.backend import LocalBackend
from workrail.store.local.layout import DATA_DIR_ENV, default_data_dir

if TYPE_CHECKING:
    from workrail.bundle.import_ import ImportResult
    from workrail.engine.api import Engine
    from workrail.fence import FenceService

WORKFLOW_PATH_ENV = "WORKFLOW_STORAGE_PATH"

# --- configuration ----------------------------------------------------------------------


def apply_config(data_dir: str | None, workflow_dirs: Sequence[str] | None) -> None:
    """Flags become environment, the one configuration channel the engine reads."""
    if data_dir:
        os.environ[DATA_DIR_ENV] = str(Path(data_dir).expanduser().absolute())
    for directory in workflow_dirs or ():
        resolved = str(Path(directory).expanduser().absolute())
        current = os.environ.get(WORKFLOW_PATH_ENV, "")
        parts = [p for p in current.split(os.pathsep) if p]
        if resolved not in parts:
            os.environ[WORKFLOW_PATH_ENV] = os.pathsep.join([*parts, resolved])


def _add_config_flags(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    # Separate dests and SUPPRESS: argparse lets a subcommand's defaults overwrite the
    # main parser's values, and colleagues' subcommands define their own --data-dir.
    prefix = "global_" if top_level else ""
    default: Any = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--data-dir",
        dest=f"{prefix}data_dir",
        metavar="DIR",
        default=default,
        help=f"data directory (default ${DATA_DIR_ENV} or ~/.workrail/data)",
    )
    parser.add_argument(
        "--workflows",
        dest=f"{prefix}workflows",
        metavar="DIR",
        action="append",
        default=default,
        help=f"extra workflow directory (repeatable; appended to ${WORKFLOW_PATH_ENV})",
    )


# --- mcp --------------------------------------------------------------------------------


@contextmanager
def _serving(args: argparse.Namespace) -> Iterator[tuple[Engine, FenceService | None]]:
    """Logging, the engine and the fence service for a server command; the fence is
    closed when the server stops."""
    from workrail.app import AppConfig, build_engine
    from workrail.mcp.transport import configure_logging, open_fence

    configure_logging(args.log_level, Path(args.log_file) if args.log_file else None)
    config = AppConfig.from_environment()
    engine = build_engine(config)
    fence = open_fence(config.data_dir, os.environ)
    try:
        yield engine, fence
    finally:
        if fence is not None:
            fence.close()


def run_mcp(args: argparse.Namespace) -> int:
    """Serve MCP; stdio unless --http. Nothing but protocol is written to stdout."""
    from workrail.mcp.transport import serve_http, serve_stdio

    with _serving(args) as (engine, fence):
        if args.http:
            return serve_http(engine, args.host, args.port, fence)
        return serve_stdio(engine, fence)


def _add_log_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        type=str.upper,
        default=None,
        help="log level (default $WORKRAIL_LOG_LEVEL or WARNING)",
    )
    parser.add_argument("--log-file", metavar="FILE", default=None, help="log here, not stderr")


def _add_mcp(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        help="serve the MCP tools (stdio, or Streamable HTTP with --http)",
        description="Serve WorkRail's MCP tools. Logs go to stderr or --log-file, never stdout.",
    )
    mcp.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp")
    _add_server_flags(mcp)
    mcp.set_defaults(handler=run_mcp)


def _add_server_flags(parser: argparse.ArgumentParser) -> None:
    """Bind address, port, logging and data/workflow locations, shared by mcp and serve."""
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    _add_log_flags(parser)
    _add_config_flags(parser, top_level=False)


# --- serve ------------------------------------------------------------------------------


def run_serve(args: argparse.Namespace) -> int:
    """MCP at /mcp and the fence's HTTP routes, on one loopback port."""
    from workrail.mcp.transport import serve_http

    with _serving(args) as (engine, fence):
        return serve_http(engine, args.host, args.port, fence, fence_http=True)


def _add_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="serve MCP (Streamable HTTP) and the effect checkpoint HTTP API on one port",
        description="One HTTP server: the MCP endpoint at /mcp and GET/POST "
        "/v1/tools/workflow-checkpoint. Binds to loopback unless --host says otherwise.",
    )
    _add_server_flags(serve)
    serve.set_defaults(handler=run_serve)


# --- demo -------------------------------------------------------------------------------


def run_demo(args: argparse.Namespace) -> int:
    from workrail.demo import run_demo as demo

    return demo(keep=args.keep, as_json=args.json)


def _add_demo(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="drive a bundled workflow end to end through the real MCP server",
        description="Start `workrail mcp` in a temporary data directory and play a scripted "
        "agent through a bundled workflow. Exits 0 only if every step behaved as expected.",
    )
    demo.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    demo.add_argument("--json", action="store_true", help="print a JSON report")
    demo.set_defaults(handler=run_demo)


# --- sessions ---------------------------------------------------------------------------


_KIND_MARK = {"step": "●", "checkpoint": "◆", "blocked_attempt": "✖"}


def _first_line(text: str, width: int = 72) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def session_tree(view: SessionView) -> Tree:
    """The run DAG as a rich tree: nodes, edge kinds, checkpoints, forks, tips and notes."""
    root = Tree(
        f"[bold]{view.session_id}[/]  {escape(view.workflow_id)}  [cyan]{escape(view.status)}[/]  "
        f"({view.event_count} events)"
    )
    for run in view.runs:
        branch = root.add(
            f"run [bold]{run.run_id}[/]  {escape(run.workflow_id)}  {run.workflow_hash[:19]}…"
        )
        for node_id in run.roots:
            _add_node(branch, run, node_id)
    if not view.is_healthy:
        reason = view.health.get("reason") or {}
        root.add(
            f"[red]health: {escape(str(view.health.get('kind')))}[/]"
            + (
                f" [dim]({escape(str(reason.get('code')))}: {escape(str(reason.get('message')))})[/]"
                if reason
                else ""
            )
        )
    if not view.runs and view.is_healthy:
        root.add("[dim]no runs[/]")
    return root


def _node_label(run: RunView, node: NodeView) -> str:
    mark = _KIND_MARK.get(node.kind, "○")
    parts = [
        f"{mark} [bold]{escape(node.step_id or node.state)}[/]"
        if node.step_id
        else f"{mark} {escape(node.state)}"
    ]
    if node.kind != "step":
        parts.append(f"[magenta]{node.kind}[/]")
    if node.state == "blocked":
        parts.append("[red]blocked[/]")
    if node.edge_kind and node.edge_kind != "acked_step":
        parts.append(f"[dim]via {node.edge_kind}[/]")
    parts.append(f"[dim]{node.node_id}[/]")
    if len(node.children) > 1:
        parts.append(f"[magenta]fork ×{len(node.children)}[/]")
    if node.node_id == run.preferred_tip:
        parts.append("[green]◀ preferred tip[/]")
    elif node.node_id in run.tips:
        parts.append("[yellow]◀ tip[/]")
    return "  ".join(parts)


def _add_node(parent: Tree, run: RunView, node_id: str) -> None:
    """A chain of single-child nodes stays at one level; only forks indent."""
    current: str | None = node_id
    while current is not None and current in run.nodes:
        node = run.nodes[current]
        branch = parent.add(_node_label(run, node))
        for note in node.notes:
            branch.add(f"[italic]notes:[/] {escape(_first_line(note))}")
        if node.artifacts:
            branch.add(f"[italic]artifacts:[/] {escape(str(node.artifacts))}")
        children = [c for c in node.children if c in run.nodes]
        if len(children) == 1:
            current = children[0]
            continue
        for n, child in enumerate(children, 1):
            kind = run.nodes[child].edge_kind or "edge"
            _add_node(branch.add(f"[magenta]branch {n}[/] [dim]({kind})[/]"), run, child)
        current = None


def _backend() -> LocalBackend:
    return LocalBackend.open(default_data_dir())


def run_sessions(args: argparse.Namespace) -> int:
    backend = _backend()
    if getattr(args, "sessions_command", None) == "show":
        return _show_session(backend, args.session_id, getattr(args, "json", False))
    views = list_sessions(backend, mtime_activity(backend.layout.session_dir))
    if args.json:
        print(json.dumps({"sessions": [v.summary_json() for v in views]}, indent=2))
        return 0
    console = Console()
    if not views:
        console.print(f"No sessions in {backend.layout.root}")
        return 0
    table = Table(title=f"Sessions in {backend.layout.root}")
    for column in ("session", "workflow", "status", "events", "last activity"):
        table.add_column(column)
    for v in views:
        table.add_row(
            v.session_id, v.workflow_id, v.status, str(v.event_count), v.last_activity or "-"
        )
    console.print(table)
    return 0


def _show_session(backend: LocalBackend, session_id: str, as_json: bool) -> int:
    if session_id not in backend.sessions.session_ids():
        message = f"no session {session_id!r} in {backend.layout.root}"
        if as_json:
            print(json.dumps({"error": {"code": "NOT_FOUND", "message": message}}))
        else:
            Console(stderr=True).print(f"[red]{escape(message)}[/]")
        return 1
    view = load_session(backend, session_id, mtime_activity(backend.layout.session_dir))
    if as_json:
        print(json.dumps(view.to_json(), indent=2, ensure_ascii=False))
    else:
        console = Console()
        if view.prefix_only:
            console.print(f"[bold yellow]{UNHEALTHY_BANNER}[/]")
        console.print(session_tree(view))
    # Non-zero so scripts notice the damage even though the session could be shown.
    return 0 if view.is_healthy else 1


def _add_sessions(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = subparsers.add_parser(
        "sessions",
        help="list sessions, or show one session's run DAG",
        description="List sessions with workflow, status and last activity.",
    )
    sessions.add_argument("--json", action="store_true", help="machine-readable output")
    nested = sessions.add_subparsers(dest="sessions_command", metavar="COMMAND")
    show = nested.add_parser("show", help="print a session's run DAG as a tree")
    show.add_argument("session_id", metavar="SESSION")
    show.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    sessions.set_defaults(handler=run_sessions)


# --- checkpoint records -----------------------------------------------------------------

# Codes that mean "what you passed is wrong" (exit 2) rather than "it could not be done" (1).
_BAD_INPUT_CODES = frozenset(
    {
        "VALIDATION_ERROR",
        "NOT_FOUND",
        "TOKEN_INVALID_FORMAT",
        "TOKEN_UNSUPPORTED_VERSION",
        "TOKEN_BAD_SIGNATURE",
        "TOKEN_SCOPE_MISMATCH",
        "TOKEN_UNKNOWN_NODE",
        "TOKEN_WORKFLOW_HASH_MISMATCH",
        "CHECKPOINT_RECORD_INVALID",
        "CHECKPOINT_PLAN_MISMATCH",
        "CHECKPOINT_CONTEXT_MISMATCH",
    }
)


def _engine() -> Engine:
    from workrail.app import AppConfig, build_engine

    return build_engine(AppConfig.from_environment())


def _fail(envelope: dict[str, Any], as_json: bool) -> int:
    """The error envelope on stdout (--json) or as readable lines on stderr."""
    code = str(envelope.get("code", "ERROR"))
    if as_json:
        print(json.dumps({"ok": False, "error": envelope}, indent=2, ensure_ascii=False))
    else:
        console = Console(stderr=True, highlight=False)
        console.print(f"[red]{escape(code)}[/]: {escape(str(envelope.get('message', '')))}")
        suggestion = (envelope.get("details") or {}).get("suggestion")
        if suggestion:
            console.print(f"  {suggestion}", markup=False)
    return 2 if code in _BAD_INPUT_CODES else 1


def _input_error(message: str, suggestion: str, as_json: bool) -> int:
    return _fail(
        {
            "code": "VALIDATION_ERROR",
            "message": message,
            "retry": {"kind": "not_retryable"},
            "details": {"suggestion": suggestion},
        },
        as_json,
    )


def run_checkpoint_export(args: argparse.Namespace) -> int:
    """The record to stdout, or to -o FILE with a summary on stdout."""
    from workrail.core.canonical import canonical_bytes

    exported = _engine().export_checkpoint_record(args.token_or_node)
    if isinstance(exported, Failure):
        return _fail(exported.failure().to_envelope(), args.json)
    record = exported.unwrap()
    data = canonical_bytes(record)
    if args.output is None:
        sys.stdout.write(data.decode("utf-8") + "\n")
        return 0
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        return _input_error(
            f"Cannot write {args.output}: {exc.strerror or exc}",
            "Choose a writable path for -o.",
            args.json,
        )
    if args.json:
        print(json.dumps({"ok": True, "output": args.output, "record": record}, indent=2))
    else:
        Console().print(
            f"Wrote the checkpoint record of {record['workflowId']} "
            f"({len(record['completed'])} completed steps) to {args.output}.",
            highlight=False,
        )
    return 0


def _read_limited(path: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes, so an oversized file is refused without reading it all."""
    with open(path, "rb") as f:
        return f.read(limit + 1)


def run_checkpoint_resume(args: argparse.Namespace) -> int:
    """A new session at the record's point; fails closed on any plan or context mismatch."""
    from workrail.engine.portable import MAX_RECORD_BYTES

    try:
        raw = _read_limited(args.file, MAX_RECORD_BYTES)
    except OSError as exc:
        return _input_error(
            f"Cannot read {args.file}: {exc.strerror or exc}",
            "Pass a record file written by `workrail checkpoint export`.",
            args.json,
        )
    context: Any = {}
    if args.context is not None:
        try:
            context = json.loads(_read_limited(args.context, 1024 * 1024))
        except (OSError, ValueError) as exc:
            return _input_error(
                f"Cannot read the context from {args.context}: {exc}",
                "Pass a JSON object file with the run's context as it was at the checkpoint.",
                args.json,
            )
    resumed = _engine().resume_checkpoint_record(raw, context)
    if isinstance(resumed, Failure):
        return _fail(resumed.failure().to_envelope(), args.json)
    response = resumed.unwrap()
    if args.json:
        print(json.dumps(response, indent=2, ensure_ascii=False))
        return 0
    pending = response.get("pending") or {}
    console = Console(highlight=False)
    console.print(
        f"Resumed in a new session. Pending step: [bold]{escape(str(pending.get('stepId')))}[/] "
        f"({escape(str(pending.get('title')))})"
    )
    for key in ("stateToken", "ackToken", "checkpointToken"):
        if key in response:
            # Tokens are copied by hand: never let the terminal width break one in two.
            console.print(f"  {key}: {response[key]}", markup=False, soft_wrap=True)
    return 0


def _add_checkpoint(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    checkpoint = subparsers.add_parser(
        "checkpoint",
        help="export or resume portable checkpoint records",
        description="A portable checkpoint record holds only the plan fingerprint and progress "
        "(no notes, no tokens, no context values); resuming fails closed unless the workflow "
        "and the context both match.",
    )
    nested = checkpoint.add_subparsers(dest="checkpoint_command", metavar="COMMAND", required=True)
    export = nested.add_parser("export", help="write the record of a checkpoint or node")
    export.add_argument(
        "token_or_node", metavar="CHECKPOINT_TOKEN_OR_NODE", help="a checkpointToken or node id"
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.add_argument("--json", action="store_true", help="machine-readable output")
    export.set_defaults(handler=run_checkpoint_export)
    resume = nested.add_parser("resume", help="start a new session from a record")
    resume.add_argument("file", metavar="FILE", help="a record from `checkpoint export`")
    resume.add_argument(
        "--context",
        metavar="CONTEXT.json",
        default=None,
        help="the run's context at the checkpoint (default: {})",
    )
    resume.add_argument("--json", action="store_true", help="machine-readable output")
    resume.set_defaults(handler=run_checkpoint_resume)


# --- keys -------------------------------------------------------------------------------


def run_keys(args: argparse.Namespace) -> int:
    from workrail.store.local.keyring import rotate_keyring

    data_dir = default_data_dir()
    rotate_keyring(data_dir)
    message = (
        "Rotated the signing key: tokens signed with the previous key stay valid until the "
        "next rotation. Restart running servers to pick up the new key."
    )
    if args.json:
        print(json.dumps({"rotated": True, "dataDir": str(data_dir)}))
    else:
        Console().print(f"{message}\n[dim]{data_dir}[/]")
    return 0


def _add_keys(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = subparsers.add_parser("keys", help="manage the token signing keyring")
    nested = keys.add_subparsers(dest="keys_command", metavar="COMMAND", required=True)
    rotate = nested.add_parser("rotate", help="make a fresh current key; keep one previous")
    rotate.add_argument("--json", action="store_true", help="machine-readable output")
    rotate.set_defaults(handler=run_keys)


# --- import tokens ----------------------------------------------------------------------


def _mint_import_tokens(result: ImportResult) -> dict[str, Any]:
    """Built at call time: `--data-dir` reaches the environment only after parsing."""
    from workrail.app import AppConfig, build_engine
    from workrail.engine.imported import tokens_for_import

    return tokens_for_import(build_engine(AppConfig.from_environment()), result)


# --- main -------------------------------------------------------------------------------


def _add_colleague_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    from workrail.bundle import cli_commands as bundle_cli
    from workrail.fence import cli_commands as fence_cli
    from workrail.workflow import cli_commands as workflow_cli

    workflow_cli.add_subcommands(subparsers)
    bundle_cli.add_subcommands(subparsers, mint_tokens=_mint_import_tokens)
    fence_cli.add_subcommands(subparsers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workrail",
        description="Workflow-enforcement MCP server for AI agents.",
    )
    parser.add_argument("--version", action="version", version=f"workrail {__version__}")
    _add_config_flags(parser, top_level=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_mcp(subparsers)
    _add_serve(subparsers)
    _add_demo(subparsers)
    _add_colleague_commands(subparsers)
    _add_sessions(subparsers)
    _add_checkpoint(subparsers)
    _add_keys(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    apply_config(args.global_data_dir, args.global_workflows)
    if args.command in ("mcp", "serve"):
        apply_config(getattr(args, "data_dir", None), getattr(args, "workflows", None))
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.parse_args([args.command, "--help"])
        return 2
    try:
        return int(handler(args))
    except BrokenPipeError:
        # `workrail sessions | head`: the reader left; not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
