"""Parsing and validating a session's manifest and segments (spec 10-storage §5).

Pure functions over bytes: the session store feeds them what it read from disk. Every
failure is a `Corruption` with the spec's code and location; nothing is ever repaired here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from workrail.core.canonical import sha256_digest
from workrail.core.events import EVENT_ADAPTER, DomainEvent, NodeCreated
from workrail.core.health import Corruption
from workrail.core.manifest import MANIFEST_ADAPTER, ManifestRecord, SegmentClosed, SnapshotPinned

T = TypeVar("T")


class CorruptionError(Exception):
    def __init__(self, corruption: Corruption) -> None:
        super().__init__(corruption.message)
        self.corruption = corruption


def _fail(code: Any, message: str, location: Any = "tail") -> CorruptionError:
    return CorruptionError(Corruption(code, message, location))


@dataclass(frozen=True)
class ManifestTail:
    """Complete records parsed from a manifest suffix, and how many bytes they span.

    `torn` is true when the suffix ended in a partial line: an append that was interrupted
    before its fsync and so was never acknowledged.
    """

    records: list[ManifestRecord]
    line_ends: list[int]  # byte offset (relative to the suffix) just after each record's line
    torn: bool


def _parse_lines(
    data: bytes, first_line: int, parse: Callable[[bytes], T], what: str
) -> tuple[list[T], list[int]]:
    """Parse `\\n`-separated JSON lines, skipping blank ones (spec §5 step 2).

    `parse` validates raw JSON bytes directly (pydantic's JSON parser is several times
    faster than json.loads + validation, and rejects NaN/Infinity); only a failing line
    is decoded again, to classify the failure.
    """
    items: list[T] = []
    ends: list[int] = []
    offset = 0
    line_no = first_line
    for raw in data.split(b"\n"):
        end = offset + len(raw) + 1
        offset = end
        if not raw.strip():
            continue
        location = "head" if line_no == 0 else "tail"
        try:
            items.append(parse(raw))
        except ValidationError as exc:
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = None
            if decoded is None or any(e["type"] == "json_invalid" for e in exc.errors()):
                raise _fail(
                    "non_contiguous_indices", f"Invalid JSONL at line {line_no}", location
                ) from exc
            version = decoded.get("v") if isinstance(decoded, dict) else None
            code = "unknown_schema_version" if version != 1 else "schema_validation_failed"
            message = f"Invalid {what} at line {line_no}: {_first_error(exc)}"
            raise _fail(code, message, location) from exc
        ends.append(end)
        line_no += 1
    return items, ends


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


def parse_manifest_suffix(data: bytes, first_record_index: int) -> ManifestTail:
    """Parse the manifest bytes that follow `first_record_index` already-known records.

    A final line without its terminating newline is left out (and reported as `torn`);
    everything else must be valid, and `manifestIndex` must continue the count.
    """
    cut = data.rfind(b"\n") + 1
    torn = cut < len(data) and bool(data[cut:].strip())
    records, ends = _parse_lines(
        data[:cut], first_record_index, MANIFEST_ADAPTER.validate_json, "manifest record"
    )
    for position, record in enumerate(records, start=first_record_index):
        if record.manifestIndex != position:
            raise _fail(
                "non_contiguous_indices",
                f"manifestIndex {record.manifestIndex} at position {position}",
                "head" if position == 0 else "tail",
            )
    return ManifestTail(records, ends, torn)


def parse_segment(data: bytes, record: SegmentClosed) -> list[DomainEvent]:
    """Verify a segment against its `segment_closed` record and parse its events."""
    if sha256_digest(data) != record.sha256:
        raise _fail("digest_mismatch", f"Segment digest mismatch: {record.segmentRelPath}")
    try:
        text_ok = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(
            "non_contiguous_indices", f"Segment is not UTF-8: {record.segmentRelPath}"
        ) from exc
    del text_ok
    events, _ = _parse_lines(data, 0, EVENT_ADAPTER.validate_json, "domain event")
    if not events:
        raise _fail("non_contiguous_indices", f"Empty segment: {record.segmentRelPath}")
    if (
        events[0].eventIndex != record.firstEventIndex
        or events[-1].eventIndex != record.lastEventIndex
    ):
        raise _fail("non_contiguous_indices", f"Segment bounds mismatch: {record.segmentRelPath}")
    for prev, cur in zip(events, events[1:], strict=False):
        if cur.eventIndex != prev.eventIndex + 1:
            raise _fail("non_contiguous_indices", f"Gap in segment: {record.segmentRelPath}")
    return events


def check_chain(previous: SegmentClosed | None, record: SegmentClosed) -> None:
    """Consecutive segments must chain: first == previous.last + 1."""
    if previous is not None and record.firstEventIndex != previous.lastEventIndex + 1:
        raise _fail(
            "non_contiguous_indices",
            f"Segment {record.segmentRelPath} does not follow event {previous.lastEventIndex}",
        )
    if record.lastEventIndex < record.firstEventIndex:
        raise _fail("non_contiguous_indices", f"Segment bounds reversed: {record.segmentRelPath}")


def pin_key(event_index: int, event_id: str, ref: str) -> tuple[int, str, str]:
    return (event_index, event_id, ref)


def missing_pins(
    events: Sequence[DomainEvent], pins: set[tuple[int, str, str]]
) -> list[NodeCreated]:
    """`node_created` events without a matching `snapshot_pinned` record."""
    return [
        e
        for e in events
        if isinstance(e, NodeCreated)
        and pin_key(e.eventIndex, e.eventId, e.data.snapshotRef) not in pins
    ]


def missing_pin_error(event: NodeCreated) -> CorruptionError:
    return _fail(
        "missing_attested_segment",
        "Missing snapshot_pinned for introduced snapshotRef: "
        f"{event.eventIndex}:{event.eventId}:{event.data.snapshotRef}",
    )


def pins_of(records: Sequence[ManifestRecord]) -> set[tuple[int, str, str]]:
    return {
        pin_key(r.eventIndex, r.createdByEventId, r.snapshotRef)
        for r in records
        if isinstance(r, SnapshotPinned)
    }
