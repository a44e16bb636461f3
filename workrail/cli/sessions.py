"""`workrail sessions [show ID]`: list sessions, or print one session's run DAG."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from workrail.cli.context import Cli
from workrail.core.errors import envelope
from workrail.engine.sessions_view import (
    UNHEALTHY_BANNER,
    NodeView,
    RunView,
    SessionView,
    list_sessions,
    load_session,
)

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
            f"run [bold]{run.run_id}[/]  {escape(run.workflow_id)}  {run.workflow_hash}"
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


def run_sessions(cli: Cli) -> int:
    backend = cli.backend()
    if getattr(cli.args, "sessions_command", None) == "show":
        return _show_session(cli, cli.args.session_id)
    views = list_sessions(backend)
    if cli.as_json:
        cli.print_json({"sessions": [v.summary_json() for v in views]})
        return 0
    console = cli.console()
    where = backend.location
    if not views:
        console.print(f"No sessions in {escape(where)}")
        return 0
    table = Table(title=f"Sessions in {escape(where)}")
    table.add_column("session", no_wrap=True, overflow="fold")
    for column in ("workflow", "status", "events", "last activity"):
        table.add_column(column, overflow="fold")
    for v in views:
        table.add_row(
            v.session_id, v.workflow_id, v.status, str(v.event_count), v.last_activity or "-"
        )
    console.print(table)
    return 0


def _show_session(cli: Cli, session_id: str) -> int:
    backend = cli.backend()
    exists = backend.sessions.exists(session_id)
    if not exists.value_or(False):
        return cli.fail(
            envelope(
                "NOT_FOUND",
                f"No session {session_id!r} in {backend.location}.",
                "Run `workrail sessions` to list the session ids.",
            )
        )
    view = load_session(backend, session_id)
    if cli.as_json:
        cli.print_json(view.to_json())
    else:
        console = cli.console()
        if view.prefix_only:
            console.print(f"[bold yellow]{UNHEALTHY_BANNER}[/]")
        console.print(session_tree(view))
    # Non-zero so scripts notice the damage even though the session could be shown.
    return 0 if view.is_healthy else 1


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    sessions = subparsers.add_parser(
        "sessions",
        parents=[common],
        help="list sessions, or show one session's run DAG",
        description="List sessions with workflow, status and last activity.",
    )
    nested = sessions.add_subparsers(dest="sessions_command", metavar="COMMAND")
    show = nested.add_parser("show", parents=[common], help="print a session's run DAG as a tree")
    show.add_argument("session_id", metavar="SESSION")
    sessions.set_defaults(handler=run_sessions)
