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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from returns.result import Success
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from workrail import __version__
from workrail.core.events import NodeCreated
from workrail.core.session_index import SessionIndex
from workrail.core.snapshot import BlockedState, CompleteState, RunningState, parse_snapshot
from workrail.store.local.backend import LocalBackend
from workrail.store.local.layout import DATA_DIR_ENV, default_data_dir
from workrail.store.ports import SessionLog

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


def run_mcp(args: argparse.Namespace) -> int:
    """Serve MCP; stdio unless --http. Nothing but protocol is written to stdout."""
    from workrail.app import AppConfig, build_engine
    from workrail.mcp.transport import configure_logging, serve_http, serve_stdio

    configure_logging(args.log_level, Path(args.log_file) if args.log_file else None)
    engine = build_engine(AppConfig.from_environment())
    if args.http:
        return serve_http(engine, args.host, args.port)
    return serve_stdio(engine)


def _add_mcp(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        help="serve the MCP tools (stdio, or Streamable HTTP with --http)",
        description="Serve WorkRail's MCP tools. Logs go to stderr or --log-file, never stdout.",
    )
    mcp.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    mcp.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    mcp.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        type=str.upper,
        default=None,
        help="log level (default $WORKRAIL_LOG_LEVEL or WARNING)",
    )
    mcp.add_argument("--log-file", metavar="FILE", default=None, help="log here, not stderr")
    _add_config_flags(mcp, top_level=False)
    mcp.set_defaults(handler=run_mcp)


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


@dataclass
class NodeView:
    node_id: str
    kind: str
    parent: str | None
    edge_kind: str | None
    snapshot_ref: str
    state: str = "unknown"
    step_id: str | None = None
    notes: list[str] = field(default_factory=list)
    artifacts: int = 0
    children: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeId": self.node_id,
            "nodeKind": self.kind,
            "parentNodeId": self.parent,
            "edgeKind": self.edge_kind,
            "state": self.state,
            "pendingStepId": self.step_id,
            "notes": self.notes,
            "artifacts": self.artifacts,
            "children": self.children,
        }


@dataclass
class RunView:
    run_id: str
    workflow_id: str
    workflow_hash: str
    nodes: dict[str, NodeView]
    tips: list[str]
    preferred_tip: str | None

    @property
    def roots(self) -> list[str]:
        return [n.node_id for n in self.nodes.values() if n.parent is None]

    @property
    def status(self) -> str:
        tip = self.nodes.get(self.preferred_tip or "")
        return "empty" if tip is None else tip.state

    def to_json(self) -> dict[str, Any]:
        edges = [
            {"fromNodeId": n.parent, "toNodeId": n.node_id, "edgeKind": n.edge_kind}
            for n in self.nodes.values()
            if n.parent is not None
        ]
        return {
            "runId": self.run_id,
            "workflowId": self.workflow_id,
            "workflowHash": self.workflow_hash,
            "status": self.status,
            "tips": self.tips,
            "preferredTip": self.preferred_tip,
            "nodes": [n.to_json() for n in self.nodes.values()],
            "edges": edges,
        }


@dataclass
class SessionView:
    session_id: str
    health: dict[str, Any]
    event_count: int
    last_activity: str | None
    runs: list[RunView]

    @property
    def workflow_id(self) -> str:
        return self.runs[0].workflow_id if self.runs else "-"

    @property
    def status(self) -> str:
        if self.health.get("kind") != "healthy":
            return str(self.health.get("kind"))
        return self.runs[0].status if self.runs else "empty"

    def summary_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "workflowId": self.workflow_id,
            "status": self.status,
            "health": self.health,
            "events": self.event_count,
            "runs": len(self.runs),
            "lastActivity": self.last_activity,
        }

    def to_json(self) -> dict[str, Any]:
        return {**self.summary_json(), "runs": [r.to_json() for r in self.runs]}


def _project(log: SessionLog) -> tuple[int, list[RunView]]:
    """Copy what the views need while the store guarantees a consistent index."""
    index: SessionIndex = log.index
    runs = []
    for run_id, info in index.runs.items():
        nodes: dict[str, NodeView] = {}
        for node_id in info.node_ids:
            created: NodeCreated = index.nodes[node_id]
            nodes[node_id] = NodeView(
                node_id=node_id,
                kind=created.data.nodeKind,
                parent=created.data.parentNodeId,
                edge_kind=None,
                snapshot_ref=created.data.snapshotRef,
            )
        for node_id in info.node_ids:
            for edge in index.edges_from.get(node_id, ()):
                nodes[node_id].children.append(edge.data.toNodeId)
                child = nodes.get(edge.data.toNodeId)
                if child is not None:
                    child.edge_kind = edge.data.edgeKind
            for output in index.outputs.get(node_id, ()):
                payload = output.data.payload
                if payload.payloadKind == "notes":
                    nodes[node_id].notes.append(payload.notesMarkdown)
                else:
                    nodes[node_id].artifacts += 1
        started = info.started.data
        runs.append(
            RunView(
                run_id=run_id,
                workflow_id=started.workflowId,
                workflow_hash=started.workflowHash,
                nodes=nodes,
                tips=index.tips(run_id),
                preferred_tip=index.preferred_tip(run_id),
            )
        )
    return log.count, runs


def _fill_states(backend: LocalBackend, runs: list[RunView]) -> None:
    cache: dict[str, tuple[str, str | None]] = {}
    for run in runs:
        for node in run.nodes.values():
            if node.snapshot_ref not in cache:
                cache[node.snapshot_ref] = _state_of(backend, node.snapshot_ref)
            node.state, node.step_id = cache[node.snapshot_ref]


def _state_of(backend: LocalBackend, ref: str) -> tuple[str, str | None]:
    loaded = backend.snapshots.get(ref)
    if not isinstance(loaded, Success) or loaded.unwrap() is None:
        return "missing_snapshot", None
    parsed = parse_snapshot(loaded.unwrap())
    if not isinstance(parsed, Success):
        return "invalid_snapshot", None
    state = parsed.unwrap().state
    if isinstance(state, CompleteState):
        return "complete", None
    if isinstance(state, BlockedState | RunningState):
        step = state.pending_step
        label = "blocked" if isinstance(state, BlockedState) else "pending"
        return label, None if step is None else step.key
    return state.kind, None


def _last_activity(backend: LocalBackend, session_id: str) -> str | None:
    try:
        directory = backend.layout.session_dir(session_id)
        newest = max((p.stat().st_mtime for p in directory.rglob("*") if p.is_file()), default=0)
    except (OSError, ValueError):
        return None
    if not newest:
        return None
    return datetime.fromtimestamp(newest).astimezone().isoformat(timespec="seconds")


def load_session(backend: LocalBackend, session_id: str) -> SessionView:
    """A read-only view of one session; an unhealthy session yields its health only."""
    health = backend.sessions.health(session_id)
    view = SessionView(session_id, health.to_json(), 0, _last_activity(backend, session_id), [])
    if health.is_healthy:
        read = backend.sessions.read(session_id, _project)
        if isinstance(read, Success):
            view.event_count, view.runs = read.unwrap()
            _fill_states(backend, view.runs)
    return view


def list_sessions(backend: LocalBackend) -> list[SessionView]:
    views = [load_session(backend, sid) for sid in backend.sessions.session_ids()]
    views.sort(key=lambda v: v.last_activity or "", reverse=True)
    return views


_KIND_MARK = {"step": "●", "checkpoint": "◆", "blocked_attempt": "✖"}


def _first_line(text: str, width: int = 72) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def session_tree(view: SessionView) -> Tree:
    """The run DAG as a rich tree: nodes, edge kinds, checkpoints, forks, tips and notes."""
    root = Tree(
        f"[bold]{view.session_id}[/]  {view.workflow_id}  [cyan]{view.status}[/]  "
        f"({view.event_count} events)"
    )
    for run in view.runs:
        branch = root.add(
            f"run [bold]{run.run_id}[/]  {run.workflow_id}  {run.workflow_hash[:19]}…"
        )
        for node_id in run.roots:
            _add_node(branch, run, node_id)
    if not view.runs:
        root.add(f"[red]health: {view.health}[/]")
    return root


def _node_label(run: RunView, node: NodeView) -> str:
    mark = _KIND_MARK.get(node.kind, "○")
    parts = [
        f"{mark} [bold]{node.step_id or node.state}[/]" if node.step_id else f"{mark} {node.state}"
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
            branch.add(f"[italic]notes:[/] {_first_line(note)}")
        if node.artifacts:
            branch.add(f"[italic]artifacts:[/] {node.artifacts}")
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
    views = list_sessions(backend)
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
            Console(stderr=True).print(f"[red]{message}[/]")
        return 1
    view = load_session(backend, session_id)
    if as_json:
        print(json.dumps(view.to_json(), indent=2, ensure_ascii=False))
    else:
        Console().print(session_tree(view))
    return 0 if view.health.get("kind") == "healthy" else 1


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


# --- main -------------------------------------------------------------------------------


def _add_colleague_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    from workrail.bundle import cli_commands as bundle_cli
    from workrail.fence import cli_commands as fence_cli
    from workrail.workflow import cli_commands as workflow_cli

    workflow_cli.add_subcommands(subparsers)
    bundle_cli.add_subcommands(subparsers)
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
    _add_demo(subparsers)
    _add_colleague_commands(subparsers)
    _add_sessions(subparsers)
    _add_keys(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    apply_config(args.global_data_dir, args.global_workflows)
    if args.command == "mcp":
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
