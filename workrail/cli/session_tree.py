"""A session's run DAG for a terminal (`workrail sessions show`, the demo's last view):
nodes, edge kinds, checkpoints, forks, tips and notes as a rich tree, printed so that no
id is ever cut in two."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.tree import Tree

from workrail.core.wording import counted
from workrail.engine.api import NodeView, RunView, SessionView

_KIND_MARK = {"step": "●", "checkpoint": "◆", "blocked_attempt": "✖"}


def _first_line(text: str, width: int = 72) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def print_whole(console: Console, renderable: Tree | Table, *, widest: bool = False) -> None:
    """Print without splitting a word: on a terminal narrower than the longest id at its
    depth, lines run past the edge (the terminal wraps them) instead of rich cutting an id
    in two, so every id can still be copied whole. `widest`: as wide as the renderable
    would like (a table's every cell on one line)."""
    unbounded = console.options.update_width(10_000)
    measured = Measurement.get(console, unbounded, renderable)
    needed = measured.maximum if widest else measured.minimum
    width = console.width
    console.width = max(width, needed)  # print(width=…) may only narrow, never widen
    try:
        console.print(renderable)
    finally:
        console.width = width


def session_tree(view: SessionView) -> Tree:
    """The run DAG as a rich tree: nodes, edge kinds, checkpoints, forks, tips and notes."""
    root = Tree(
        f"[bold]{view.session_id}[/]  {escape(view.workflow_id)}  [cyan]{escape(view.status)}[/]  "
        f"({counted(view.event_count, 'event')})"
    )
    for run in view.runs:
        branch = root.add(
            f"run [bold]{run.run_id}[/]  {escape(run.workflow_id)}  [cyan]{escape(run.status)}[/]"
            f"  {run.workflow_hash}"
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
