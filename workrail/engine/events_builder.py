"""Building the events of an append plan. Pure apart from the ids `mint` supplies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workrail.core.events import DomainEvent, parse_event
from workrail.core.ids import IdPrefix


class PlanBuilder:
    """Collects events with contiguous indices starting at the log's next index."""

    def __init__(self, session_id: str, first_index: int, mint: Callable[[IdPrefix], str]) -> None:
        self.session_id = session_id
        self.next_index = first_index
        self.events: list[DomainEvent] = []
        self._mint = mint

    def add(
        self,
        kind: str,
        dedupe_key: str,
        data: dict[str, Any],
        *,
        run_id: str | None = None,
        node_id: str | None = None,
    ) -> DomainEvent:
        raw: dict[str, Any] = {
            "v": 1,
            "eventId": self._mint("evt"),
            "eventIndex": self.next_index,
            "sessionId": self.session_id,
            "kind": kind,
            "dedupeKey": dedupe_key,
            "data": data,
        }
        if run_id is not None:
            scope = {"runId": run_id}
            if node_id is not None:
                scope["nodeId"] = node_id
            raw["scope"] = scope
        event = parse_event(raw)
        self.events.append(event)
        self.next_index += 1
        return event
