"""What a run DAG shows of each node: its snapshot's engine state and pending step.

Pure. Both are facts of a content-addressed, immutable snapshot, so a store can record
them when the snapshot is stored and hand them out later without reading it again: a
2,000-node run needs 2,000 of them, and a snapshot at step n holds O(n) bytes.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from returns.result import Success

from workrail.core.snapshot import BlockedState, CompleteState, RunningState, parse_snapshot

STATE_KINDS: Final = ("init", "running", "blocked", "complete", "invalid")
"""`invalid`: the stored object is not an execution snapshot."""


class SnapshotState(NamedTuple):
    kind: str
    """One of `STATE_KINDS`."""
    pending_step: str | None = None
    """The pending step instance's key (`loop@2::step`), when one is pending."""


INVALID: Final = SnapshotState("invalid")


def snapshot_state(raw: Any) -> SnapshotState:
    """The state of a stored snapshot object (already JSON-decoded)."""
    return _quick(raw) or _parsed(raw)


def _quick(raw: Any) -> SnapshotState | None:
    """Read straight off the JSON: the store hands out only bytes whose digest matches
    the ref they were validated and written under, so this needs no second validation
    (anything of an unexpected shape takes the full parse)."""
    try:
        state = raw["enginePayload"]["engineState"]
        kind = state["kind"]
        if kind in ("init", "complete"):
            return SnapshotState(str(kind))
        if kind not in ("running", "blocked"):
            return None
        pending = state["pending"]
        if pending["kind"] == "none":
            return SnapshotState(str(kind))
        step = pending["step"]
        frames = [(str(f["loopId"]), int(f["iteration"])) for f in step.get("loopPath", [])]
        step_id = str(step["stepId"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not frames:
        return SnapshotState(str(kind), step_id)
    path = "/".join(f"{loop}@{i}" for loop, i in frames)
    return SnapshotState(str(kind), f"{path}::{step_id}")


def _parsed(raw: Any) -> SnapshotState:
    parsed = parse_snapshot(raw)
    if not isinstance(parsed, Success):
        return INVALID
    state = parsed.unwrap().state
    if isinstance(state, CompleteState):
        return SnapshotState("complete")
    if isinstance(state, BlockedState | RunningState):
        step = state.pending_step
        return SnapshotState(state.kind, None if step is None else step.key)
    return SnapshotState(state.kind)
