"""Dedupe-key recipes (spec 20-events §4) and their charset/length check.

A dedupe key is the per-event idempotency key: an append plan whose keys all exist is a
no-op, so a retried call never writes twice.
"""

from __future__ import annotations

import re
from typing import Final

from workrail.core.budgets import DEDUPE_KEY_MAX_CHARS

_KEY_RE: Final = re.compile(r"^[a-z0-9_:>-]+$")


class DedupeKeyError(ValueError):
    """A recipe produced a key outside the allowed charset or length."""


def checked(key: str) -> str:
    """Return `key` if it is a valid dedupe key, else raise `DedupeKeyError`."""
    if len(key) > DEDUPE_KEY_MAX_CHARS or _KEY_RE.fullmatch(key) is None:
        raise DedupeKeyError(f"invalid dedupe key ({len(key)} chars): {key[:80]!r}")
    return key


def session_created(sess: str) -> str:
    return checked(f"session_created:{sess}")


def run_started(sess: str, run: str) -> str:
    return checked(f"run_started:{sess}:{run}")


def node_created(sess: str, run: str, node: str) -> str:
    return checked(f"node_created:{sess}:{run}:{node}")


def checkpoint_edge(sess: str, run: str, from_node: str, attempt: str) -> str:
    return checked(f"checkpoint:{sess}:{run}:{from_node}:{attempt}")


def checkpoint_node(sess: str, run: str, parent_node: str, attempt: str) -> str:
    return checked(f"checkpoint_node:{checkpoint_edge(sess, run, parent_node, attempt)}")


def acked_step_edge(sess: str, run: str, from_node: str, to_node: str) -> str:
    return checked(f"edge_created:{sess}:{run}:{from_node}->{to_node}:acked_step")


def advance_recorded(sess: str, from_node: str, attempt: str) -> str:
    return checked(f"advance_recorded:{sess}:{from_node}:{attempt}")


def validation_performed(sess: str, attempt: str) -> str:
    return checked(f"validation_performed:{sess}:{attempt}")


def node_output_appended(sess: str, output_id: str) -> str:
    return checked(f"node_output_appended:{sess}:{output_id}")


def preferences_changed(sess: str, run: str, node: str, change_id: str) -> str:
    return checked(f"preferences_changed:{sess}:{run}:{node}:{change_id}")


def context_set(sess: str, run: str, context_id: str) -> str:
    return checked(f"context_set:{sess}:{run}:{context_id}")


def decision_trace_appended(sess: str, trace_id: str) -> str:
    return checked(f"decision_trace_appended:{sess}:{trace_id}")


def gap_recorded(sess: str, gap_id: str) -> str:
    return checked(f"gap_recorded:{sess}:{gap_id}")


def observation_recorded(sess: str, key: str) -> str:
    return checked(f"observation_recorded:{sess}:{key}")
