"""Builders for append plans shaped like the engine's (start, advance) for store tests."""

from __future__ import annotations

import os
from typing import Any

from workrail.core import dedupe
from workrail.core.canonical import canonical_digest
from workrail.core.events import DomainEvent, parse_event
from workrail.core.ids import make_id
from workrail.store.ports import AppendPlan, SnapshotPin

WF_HASH = "sha256:" + "ab" * 32


def new_id(prefix: str) -> str:
    return make_id(prefix, os.urandom(16))  # type: ignore[arg-type]


def fresh_session_id() -> str:
    """A random session id, for imports that must rename a bundle's session."""
    return new_id("sess")


def _event(
    sess: str,
    index: int,
    kind: str,
    key: str,
    data: dict[str, Any],
    scope: dict[str, Any] | None,
) -> DomainEvent:
    raw = {
        "v": 1,
        "eventId": new_id("evt"),
        "eventIndex": index,
        "sessionId": sess,
        "kind": kind,
        "dedupeKey": key,
        "data": data,
    }
    if scope is not None:
        raw["scope"] = scope
    return parse_event(raw)


def snapshot_ref(label: str) -> str:
    return canonical_digest({"label": label})


def start_plan(sess: str, run: str, root: str) -> AppendPlan:
    ref = snapshot_ref(root)
    node = _event(
        sess,
        2,
        "node_created",
        dedupe.node_created(sess, run, root),
        {"nodeKind": "step", "parentNodeId": None, "workflowHash": WF_HASH, "snapshotRef": ref},
        {"runId": run, "nodeId": root},
    )
    events = (
        _event(sess, 0, "session_created", dedupe.session_created(sess), {}, None),
        _event(
            sess,
            1,
            "run_started",
            dedupe.run_started(sess, run),
            {
                "workflowId": "probe-flow",
                "workflowHash": WF_HASH,
                "workflowSourceKind": "bundled",
                "workflowSourceRef": "(bundled)",
            },
            {"runId": run},
        ),
        node,
    )
    return AppendPlan(events, (SnapshotPin(ref, 2, node.eventId),))


def advance_plan(
    sess: str, run: str, first_index: int, parent: str, child: str, attempt: str
) -> AppendPlan:
    ref = snapshot_ref(child)
    adv = _event(
        sess,
        first_index,
        "advance_recorded",
        dedupe.advance_recorded(sess, parent, attempt),
        {
            "attemptId": attempt,
            "intent": "ack_pending",
            "outcome": {"kind": "advanced", "toNodeId": child},
        },
        {"runId": run, "nodeId": parent},
    )
    node = _event(
        sess,
        first_index + 1,
        "node_created",
        dedupe.node_created(sess, run, child),
        {"nodeKind": "step", "parentNodeId": parent, "workflowHash": WF_HASH, "snapshotRef": ref},
        {"runId": run, "nodeId": child},
    )
    edge = _event(
        sess,
        first_index + 2,
        "edge_created",
        dedupe.acked_step_edge(sess, run, parent, child),
        {
            "edgeKind": "acked_step",
            "fromNodeId": parent,
            "toNodeId": child,
            "cause": {"kind": "intentional_fork", "eventId": adv.eventId},
        },
        {"runId": run},
    )
    return AppendPlan((adv, node, edge), (SnapshotPin(ref, first_index + 1, node.eventId),))


class Chain:
    """A session grown one advance at a time, remembering its tip."""

    def __init__(self) -> None:
        self.sess = new_id("sess")
        self.run = new_id("run")
        self.tip = new_id("node")
        self.next_index = 3

    def start(self) -> AppendPlan:
        return start_plan(self.sess, self.run, self.tip)

    def advance(self) -> AppendPlan:
        child = new_id("node")
        plan = advance_plan(
            self.sess, self.run, self.next_index, self.tip, child, new_id("attempt")
        )
        self.tip = child
        self.next_index += 3
        return plan
