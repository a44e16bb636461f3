"""The raw event log as a person filters it: by kind, "blocked only", a page at a time.

Pure: events in, rows and notices out. Filter values come from the query string, so
anything malformed is dropped with a notice that says what was ignored, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

from workrail.core.events import (
    EVENT_KINDS,
    AdvanceRecorded,
    DomainEvent,
    EdgeCreated,
    NodeCreated,
    ValidationPerformed,
)

PAGE_SIZE: Final = 200
MAX_PAGE_SIZE: Final = 1000


@dataclass(frozen=True)
class EventFilter:
    kinds: frozenset[str] = frozenset()
    """Empty: every kind."""
    blocked_only: bool = False
    since: int = 0
    limit: int = PAGE_SIZE
    notices: tuple[str, ...] = ()

    def query(
        self,
        *,
        kinds: frozenset[str] | None = None,
        blocked_only: bool | None = None,
        since: int | None = None,
    ) -> str:
        """The query string of this filter with some values changed (for links)."""
        chosen = self.kinds if kinds is None else kinds
        pairs: list[tuple[str, str]] = [("kind", k) for k in sorted(chosen)]
        if self.blocked_only if blocked_only is None else blocked_only:
            pairs.append(("blocked", "1"))
        start = self.since if since is None else since
        if start:
            pairs.append(("since", str(start)))
        if self.limit != PAGE_SIZE:
            pairs.append(("limit", str(self.limit)))
        return urlencode(pairs)


def _int(raw: str | None, name: str, low: int, high: int, notices: list[str]) -> int | None:
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        notices.append(f"Ignored {name}={raw[:40]!r}: not a whole number.")
        return None
    if not low <= value <= high:
        notices.append(f"Ignored {name}={value}: must be between {low} and {high}.")
        return None
    return value


def parse_filter(params: Mapping[str, str], kinds: Sequence[str]) -> EventFilter:
    """The filter a query string asks for; `kinds` are its `kind` values (repeatable)."""
    notices: list[str] = []
    chosen = set()
    for kind in kinds:
        if kind in EVENT_KINDS:
            chosen.add(kind)
        elif kind:
            notices.append(f"Ignored kind={kind[:40]!r}: not an event kind.")
    blocked_raw = params.get("blocked", "")
    if blocked_raw not in ("", "0", "1", "on", "true"):
        notices.append(f"Ignored blocked={blocked_raw[:40]!r}: use 1 or leave it out.")
    since = _int(params.get("since"), "since", 0, 2**53 - 1, notices)
    limit = _int(params.get("limit"), "limit", 1, MAX_PAGE_SIZE, notices)
    return EventFilter(
        frozenset(chosen),
        blocked_raw in ("1", "on", "true"),
        since or 0,
        limit or PAGE_SIZE,
        tuple(notices),
    )


@dataclass(frozen=True)
class EventRow:
    index: int
    kind: str
    run_id: str | None
    node_id: str | None
    summary: str
    blocked: bool
    raw_json: str


@dataclass
class EventPage:
    rows: list[EventRow] = field(default_factory=list)
    total: int = 0
    matching: int = 0
    next_since: int | None = None


def blocked_node_ids(events: Sequence[DomainEvent]) -> set[str]:
    return {
        e.node_id
        for e in events
        if isinstance(e, NodeCreated) and e.data.nodeKind == "blocked_attempt"
    }


def is_blocked_event(event: DomainEvent, blocked_nodes: set[str]) -> bool:
    """Whether the event records a block: the advance into a blocked attempt (or a legacy
    blocked outcome), a failed validation, the blocked-attempt node and its edge. What a
    later retry from that node recorded is not part of the block."""
    if isinstance(event, AdvanceRecorded):
        outcome = event.data.outcome
        return outcome.kind == "blocked" or outcome.toNodeId in blocked_nodes
    if isinstance(event, ValidationPerformed):
        return not event.data.result.valid
    if isinstance(event, EdgeCreated):
        return event.data.toNodeId in blocked_nodes
    if isinstance(event, NodeCreated):
        return event.data.nodeKind == "blocked_attempt"
    return False


def _first_line(text: str, width: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def summarize(event: DomainEvent) -> str:
    """One line a person can scan; the full event is shown beside it as JSON."""
    data: Any = getattr(event, "data", None)
    kind = event.kind
    if kind == "observation_recorded":
        return f"{data.key} = {data.value.value}"
    if kind == "run_started":
        return f"run of {data.workflowId} ({data.workflowSourceKind})"
    if kind == "node_created":
        parent = f" under {data.parentNodeId}" if data.parentNodeId else " (root)"
        return f"{data.nodeKind} node {event.node_id}{parent}"
    if kind == "edge_created":
        return f"{data.edgeKind} {data.fromNodeId} → {data.toNodeId} ({data.cause.kind})"
    if kind == "advance_recorded":
        outcome = data.outcome
        target = f" → {outcome.toNodeId}" if outcome.kind == "advanced" else ""
        return f"attempt {data.attemptId}: {outcome.kind}{target}"
    if kind == "validation_performed":
        verdict = "valid" if data.result.valid else f"invalid ({len(data.result.issues)} issues)"
        return f"{data.contractRef}: {verdict}"
    if kind == "node_output_appended":
        payload = data.payload
        if payload.payloadKind == "notes":
            return f"{data.outputChannel}: {_first_line(payload.notesMarkdown)}"
        return f"artifact {payload.contentType}, {payload.byteLength} bytes"
    if kind == "preferences_changed":
        eff = data.effective
        return f"autonomy {eff.autonomy}, risk {eff.riskPolicy} ({data.source})"
    if kind == "context_set":
        keys = sorted(data.context) if isinstance(data.context, dict) else []
        shown = ", ".join(keys[:8]) + (" …" if len(keys) > 8 else "")
        return f"context ({data.source}): {shown or 'empty'}"
    if kind == "decision_trace_appended":
        first = data.entries[0]
        more = f" (+{len(data.entries) - 1})" if len(data.entries) > 1 else ""
        return f"{first.kind}: {_first_line(first.summary)}{more}"
    if kind == "gap_recorded":
        return f"{data.severity}: {_first_line(data.summary)}"
    if kind == "capability_observed":
        return f"{data.capability}: {data.status}"
    if kind == "divergence_recorded":
        return f"{data.reason}: {_first_line(data.summary)}"
    return kind.replace("_", " ")


def _row(event: DomainEvent, blocked: bool) -> EventRow:
    scope = event.scope
    return EventRow(
        event.eventIndex,
        event.kind,
        scope.runId if scope is not None else None,
        scope.nodeId if scope is not None else None,
        summarize(event),
        blocked,
        json.dumps(event.to_json(), indent=2, ensure_ascii=False),
    )


def _matches(event: DomainEvent, wanted: EventFilter, blocked: bool) -> bool:
    if wanted.kinds and event.kind not in wanted.kinds:
        return False
    return blocked or not wanted.blocked_only


def matching(events: Sequence[DomainEvent], wanted: EventFilter) -> int:
    """How many of `events` from `since` on pass the filter."""
    blocked_nodes = blocked_node_ids(events)
    return sum(
        1
        for e in events
        if e.eventIndex >= wanted.since and _matches(e, wanted, is_blocked_event(e, blocked_nodes))
    )


def page_of(
    events: Sequence[DomainEvent],
    wanted: EventFilter,
    lookahead: Sequence[DomainEvent] = (),
) -> EventPage:
    """The matching events from `since` on, at most `limit` of them. `lookahead` (the
    events just after) only helps tell whether the last ones belong to a blocked attempt."""
    blocked_nodes = blocked_node_ids([*events, *lookahead])
    page = EventPage(total=len(events))
    for event in events:
        blocked = is_blocked_event(event, blocked_nodes)
        if not _matches(event, wanted, blocked):
            continue
        page.matching += 1
        if event.eventIndex < wanted.since:
            continue
        if len(page.rows) >= wanted.limit:
            if page.next_since is None:
                page.next_since = event.eventIndex
            continue
        page.rows.append(_row(event, blocked))
    return page
