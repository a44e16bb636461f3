"""Run DAG layout: the main line follows the preferred tip, forks become side lanes, and
long linear stretches fold so a 2,000-step run stays readable."""

from __future__ import annotations

from workrail.console.dag import FOLD_AT, KEEP, MAX_LANE_DEPTH, Fold, Lane, Step, lay_out
from workrail.engine.sessions_view import NodeView, RunView


def _node(i: int, parent: int | None, kind: str = "step", state: str = "pending") -> NodeView:
    return NodeView(
        node_id=f"n{i:05d}",
        kind=kind,
        parent=None if parent is None else f"n{parent:05d}",
        edge_kind=None
        if parent is None
        else ("checkpoint" if kind == "checkpoint" else "acked_step"),
        snapshot_ref="sha256:" + "0" * 64,
        state=state,
        step_id=f"s{i}",
    )


def _run(nodes: list[NodeView], preferred: str) -> RunView:
    by_id = {n.node_id: n for n in nodes}
    for n in nodes:
        if n.parent is not None:
            by_id[n.parent].children.append(n.node_id)
    tips = sorted(n.node_id for n in nodes if not n.children)
    return RunView("run_x", "wf", "sha256:" + "1" * 64, by_id, tips, preferred)


def _ids(lane: Lane) -> list[str]:
    out: list[str] = []
    for item in lane.items:
        if isinstance(item, Fold):
            out.extend(s.node.node_id for s in item.steps)
        else:
            out.append(item.node.node_id)
    return out


def test_a_2000_step_run_folds_to_a_few_lines() -> None:
    nodes = [_node(0, None)] + [_node(i, i - 1) for i in range(1, 2000)]
    (lane,) = lay_out(_run(nodes, "n01999"))
    assert len(lane.items) == 2 * KEEP + 2, "the ends of the stretch, the fold, and the tip"
    fold = lane.items[KEEP]
    assert isinstance(fold, Fold)
    assert len(fold.steps) == 1999 - 2 * KEEP
    assert _ids(lane) == [n.node_id for n in nodes], "nothing is lost, only folded"
    last = lane.items[-1]
    assert isinstance(last, Step)
    assert last.is_preferred
    assert last.is_tip


def test_short_stretches_and_remarkable_nodes_stay_open() -> None:
    nodes = [_node(0, None)] + [_node(i, i - 1) for i in range(1, FOLD_AT)]
    (lane,) = lay_out(_run(nodes, f"n{FOLD_AT - 1:05d}"))
    assert not any(isinstance(i, Fold) for i in lane.items)
    blocked = [_node(0, None)] + [
        _node(i, i - 1, state="blocked" if i == 10 else "pending") for i in range(1, 30)
    ]
    (lane,) = lay_out(_run(blocked, "n00029"), selected="n00020")
    shown = [i.node.node_id for i in lane.items if isinstance(i, Step)]
    assert "n00010" in shown, "blocked and selected nodes are never folded"
    assert "n00020" in shown, "blocked and selected nodes are never folded"


def test_main_line_follows_the_preferred_tip_and_forks_become_side_lanes() -> None:
    # 0 → 1 → 2 → 3 (preferred); 1 → 4 (an older fork); 2 → 5 (a checkpoint)
    nodes = [
        _node(0, None),
        _node(1, 0),
        _node(2, 1),
        _node(3, 2),
        _node(4, 1),
        _node(5, 2, kind="checkpoint"),
    ]
    (lane,) = lay_out(_run(nodes, "n00003"))
    assert _ids(lane) == ["n00000", "n00001", "n00002", "n00003"]
    fork = lane.items[1]
    assert isinstance(fork, Step)
    assert fork.is_fork
    assert [_ids(side) for side in fork.side] == [["n00004"]]
    checkpointed = lane.items[2]
    assert isinstance(checkpointed, Step)
    (side,) = checkpointed.side
    assert side.edge_kind == "checkpoint"
    assert _ids(side) == ["n00005"]
    # The same DAG with the old fork preferred puts that branch on the main line.
    (lane,) = lay_out(_run(nodes, "n00004"))
    assert _ids(lane) == ["n00000", "n00001", "n00004"]


def test_deeply_nested_side_lanes_are_cut_with_a_link() -> None:
    # 0 → 1 is the main line; 0 → 2 starts a staircase where every node's older child
    # nests one side lane deeper than the last.
    nodes = [_node(0, None), _node(1, 0)]
    parent = 0
    for k in range(40):
        deeper, leaf = 100 + 2 * k, 101 + 2 * k
        nodes += [_node(deeper, parent), _node(leaf, parent)] if k else [_node(deeper, 0)]
        parent = deeper
    (lane,) = lay_out(_run(nodes, "n00001"))
    depth, current = 0, lane
    while True:
        sides = [s for item in current.items if isinstance(item, Step) for s in item.side]
        if not sides:
            break
        current, depth = sides[0], depth + 1
    assert depth == MAX_LANE_DEPTH + 1
    assert current.truncated_at is not None
    assert current.items == []
