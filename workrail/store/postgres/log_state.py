"""A session's validated state, and how rows from the database extend it.

The rows hold the very bytes the file backend writes: each event and each manifest record
is one canonical JSON line (without its newline). So validation is the file backend's: the
manifest rows joined with newlines are a manifest suffix, the event rows a
`segment_closed` attests joined with newlines are its segment, checked against the
record's sha256 — and anything that does not validate gets the same health class as on
files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workrail.core.events import DomainEvent
from workrail.core.health import Corruption, CorruptionCode
from workrail.core.log_reader import (
    CorruptionError,
    check_chain,
    missing_pin_error,
    missing_pins,
    parse_manifest_suffix,
    parse_segment,
    pins_of,
)
from workrail.core.manifest import ManifestRecord, SegmentClosed, SnapshotPinned
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.summary_accumulator import SummaryAccumulator
from workrail.store.ports import SessionLog


@dataclass
class LogState:
    """The first `len(events)` events of a session, validated, with their manifest."""

    events: list[DomainEvent] = field(default_factory=list)
    manifest: list[ManifestRecord] = field(default_factory=list)
    index: SessionIndex = field(default_factory=SessionIndex)
    summary: SummaryAccumulator = field(default_factory=SummaryAccumulator)
    pins: set[tuple[int, str, str]] = field(default_factory=set)
    last_segment: SegmentClosed | None = None

    def view(self, session_id: str) -> SessionLog:
        return SessionLog(session_id, self.events, self.manifest, self.index, self.summary)

    def add(self, events: Sequence[DomainEvent], records: Sequence[ManifestRecord]) -> None:
        """Fold an append this process validated itself (raises `ProjectionError`)."""
        for event in events:
            self.index.apply(event)
        self.events.extend(events)
        self.manifest.extend(records)
        self.pins |= pins_of(records)
        for record in records:
            if isinstance(record, SegmentClosed):
                self.last_segment = record


def _corrupt(code: CorruptionCode, message: str) -> CorruptionError:
    return CorruptionError(Corruption(code, message, "tail"))


def extend(
    state: LogState,
    manifest_rows: Sequence[bytes],
    event_rows: Mapping[int, bytes],
    *,
    salvage: bool = False,
) -> Corruption | None:
    """Validate the manifest rows that follow `state.manifest` (and the events they
    attest) and fold them into `state`. Strict (the default): raises `CorruptionError`,
    leaving `state` partly extended for the caller to throw away. Salvage: stops at the
    first bad record, keeps the prefix, and returns why it stopped."""
    first_new_event = len(state.events)
    try:
        tail = parse_manifest_suffix(
            b"".join(row + b"\n" for row in manifest_rows), len(state.manifest)
        )
        if len(tail.records) != len(manifest_rows):
            raise _corrupt("non_contiguous_indices", "A manifest row holds more than one record")
    except CorruptionError as exc:
        if salvage:
            return exc.corruption
        raise
    for record in tail.records:
        try:
            if isinstance(record, SegmentClosed):
                check_chain(state.last_segment, record)
                if state.last_segment is None and record.firstEventIndex != 0:
                    raise CorruptionError(
                        Corruption(
                            "non_contiguous_indices",
                            "The first segment must start at event 0",
                            "head",
                        )
                    )
                events = parse_segment(_segment(record, event_rows), record)
                for event in events:
                    state.index.apply(event)
                state.events.extend(events)
                state.last_segment = record
            else:
                assert isinstance(record, SnapshotPinned)
                state.pins |= pins_of([record])
            state.manifest.append(record)
        except ProjectionError as exc:
            corruption = Corruption("non_contiguous_indices", str(exc), "tail")
            if salvage:
                return corruption
            raise CorruptionError(corruption) from exc
        except CorruptionError as exc:
            if salvage:
                return exc.corruption
            raise
    if not salvage:
        unpinned = missing_pins(state.events[first_new_event:], state.pins)
        if unpinned:
            raise missing_pin_error(unpinned[0])
    return None


def _segment(record: SegmentClosed, event_rows: Mapping[int, bytes]) -> bytes:
    """The segment a `segment_closed` attests, rebuilt from its event rows."""
    lines = []
    for event_index in range(record.firstEventIndex, record.lastEventIndex + 1):
        row = event_rows.get(event_index)
        if row is None:
            raise _corrupt(
                "missing_attested_segment",
                f"Missing attested event {event_index} of {record.segmentRelPath}",
            )
        lines.append(row + b"\n")
    return b"".join(lines)
