"""The decoded contents of the three token kinds (frozen: a verified token never changes).

No token carries a `runId`: a node id names exactly one run (its `node_created` event), so
the engine re-derives the run from the log. See `workrail.tokens` for why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from workrail.core.ids import workflow_hash_ref

TokenKind = Literal["state", "ack", "checkpoint", "continue"]


@dataclass(frozen=True)
class StateToken:
    """Names a node (session + node) and the workflow the run was pinned to."""

    session_id: str
    node_id: str
    workflow_hash_ref: str
    kind: Literal["state"] = "state"

    def matches_workflow_hash(self, workflow_hash: str) -> bool:
        """True when `workflow_hash` (`sha256:<hex>`) is the one this token was minted for."""
        try:
            return workflow_hash_ref(workflow_hash) == self.workflow_hash_ref
        except ValueError:
            return False


@dataclass(frozen=True)
class AttemptToken:
    """The fields of every token that authorises one attempt on a node (ack, checkpoint,
    continue): they are packed and unpacked alike."""

    session_id: str
    node_id: str
    attempt_id: str


@dataclass(frozen=True)
class AckToken(AttemptToken):
    """Authorises recording one advance attempt (`attempt_id`) from a node."""

    kind: Literal["ack"] = "ack"


@dataclass(frozen=True)
class CheckpointToken(AttemptToken):
    """Authorises recording one checkpoint (`attempt_id`) on a node."""

    kind: Literal["checkpoint"] = "checkpoint"


@dataclass(frozen=True)
class ContinueToken(AttemptToken):
    """State and ack in one: names a node and authorises one advance attempt from it.

    It carries no workflowHashRef (that would not fit in 100 characters): the MAC binds
    the session and node, and the node's own event fixes the workflow hash.
    """

    kind: Literal["continue"] = "continue"

    def matches_workflow_hash(self, workflow_hash: str) -> bool:
        """Always true: the node the token names fixes the hash (see the class doc)."""
        del workflow_hash
        return True

    def ack(self) -> AckToken:
        """The ack half, as the advance path checks it."""
        return AckToken(self.session_id, self.node_id, self.attempt_id)


Token = StateToken | AckToken | CheckpointToken | ContinueToken
