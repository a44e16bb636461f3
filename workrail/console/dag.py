"""Laying out a run DAG for the page: a main line with side branches, long linear
stretches folded away.

Pure. The main line follows the branch that holds the preferred tip, so the path the
run is on reads top to bottom at one level however many forks, retries and checkpoints
hang off it; every other child starts a side lane drawn beside its fork node. A stretch
of more than `FOLD_AT` unremarkable steps (one child, no side lane, not blocked, not a
tip, not selected) keeps its first and last `KEEP` steps visible and folds the rest, so a
2,000-step run is a page, not a scroll.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

from workrail.engine.api import NodeView, RunView

FOLD_AT: Final = 8
KEEP: Final = 2
MAX_LANE_DEPTH: Final = 24
"""Side lanes nested deeper than this are shown as a link to their first node."""


@dataclass
class Step:
    node: NodeView
    side: list[Lane] = field(default_factory=list)
    is_tip: bool = False
    is_preferred: bool = False
    is_fork: bool = False


@dataclass
class Fold:
    """Consecutive plain steps shown as one line that opens to list them."""

    steps: list[Step]


@dataclass
class Lane:
    items: list[Step | Fold]
    edge_kind: str | None = None
    truncated_at: str | None = None
    """Set when nesting got too deep: the node where this lane would continue."""


def _on_preferred_path(run: RunView) -> set[str]:
    path: set[str] = set()
    current = run.preferred_tip
    while current is not None and current in run.nodes and current not in path:
        path.add(current)
        current = run.nodes[current].parent
    return path


def lay_out(run: RunView, selected: str | None = None) -> list[Lane]:
    """One lane per root (a run normally has one)."""
    preferred = _on_preferred_path(run)
    tips = set(run.tips)
    keep_open = {selected} if selected else set()
    return [
        _lane(run, root, preferred, tips, keep_open, depth=0)
        for root in run.roots
        if root in run.nodes
    ]


def _children(run: RunView, node: NodeView) -> list[str]:
    return [c for c in node.children if c in run.nodes]


def _main_child(run: RunView, children: list[str], preferred: Collection[str]) -> str:
    """The child the lane continues with: the one towards the preferred tip, else the
    newest step child (retries and checkpoints are side lanes), else the last one."""
    for child in children:
        if child in preferred:
            return child
    steps = [c for c in children if run.nodes[c].kind == "step"]
    return (steps or children)[-1]


def _lane(
    run: RunView,
    start: str,
    preferred: Collection[str],
    tips: Collection[str],
    keep_open: Collection[str],
    depth: int,
) -> Lane:
    lane = Lane([], run.nodes[start].edge_kind)
    if depth > MAX_LANE_DEPTH:
        lane.truncated_at = start
        return lane
    steps: list[Step] = []
    current: str | None = start
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        node = run.nodes[current]
        step = Step(
            node,
            is_tip=current in tips,
            is_preferred=current == run.preferred_tip,
        )
        children = _children(run, node)
        step.is_fork = len(children) > 1
        steps.append(step)
        if not children:
            break
        main = _main_child(run, children, preferred)
        step.side = [
            _lane(run, c, preferred, tips, keep_open, depth + 1) for c in children if c != main
        ]
        current = main
    lane.items = fold(steps, keep_open)
    return lane


def _plain(step: Step, keep_open: Collection[str]) -> bool:
    node = step.node
    return (
        not step.side
        and not step.is_tip
        and node.kind == "step"
        and node.state not in ("blocked", "missing_snapshot", "invalid_snapshot")
        and node.node_id not in keep_open
    )


def fold(steps: list[Step], keep_open: Collection[str] = ()) -> list[Step | Fold]:
    """Fold every run of more than FOLD_AT plain steps down to its ends."""
    out: list[Step | Fold] = []
    stretch: list[Step] = []

    def flush() -> None:
        if len(stretch) > FOLD_AT:
            out.extend(stretch[:KEEP])
            out.append(Fold(stretch[KEEP:-KEEP]))
            out.extend(stretch[-KEEP:])
        else:
            out.extend(stretch)
        stretch.clear()

    for step in steps:
        if _plain(step, keep_open):
            stretch.append(step)
        else:
            flush()
            out.append(step)
    flush()
    return out
