"""Import validation (spec 60-bundles §4), pure: bytes in, a validated bundle or the first
error out. Nothing here touches the file system, so a rejected bundle writes nothing.

Order (the spec's, extended): size → JSON → version → schema (including canonical form,
session ids, snapshot schema) → integrity (complete coverage, content keys) → event order
and contiguity → manifest order, segment chaining and pins → references → dedupe keys and
DAG replay → meaning (workflows compile, snapshots fit them, tips can be continued: see
contents.py). The checks beyond the spec make "validates" mean "imports as exactly this
truth": whatever passes is written by the normal append protocol and reads back equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from returns.result import Failure, Result, Success

from workrail.bundle.contents import check_contents
from workrail.bundle.errors import BundleError, pointer
from workrail.bundle.integrity import references, verify
from workrail.bundle.models import Bundle
from workrail.core.canonical import CanonicalJsonError, canonical_bytes, is_digest, jsonl_line
from workrail.core.canonical import sha256_digest as digest_of
from workrail.core.events import DomainEvent, NodeCreated, RunStarted
from workrail.core.ids import is_session_id
from workrail.core.manifest import ManifestRecord, SegmentClosed, SnapshotPinned, segment_rel_path
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.snapshot import parse_snapshot

MAX_BUNDLE_BYTES: Final = 64 * 1024 * 1024
"""64 MiB. Checked on the raw bytes (and by the file reader on the file size) before any
parsing, so an oversized input costs neither memory for a parse tree nor CPU."""

MAX_DEPTH: Final = 200
"""Deepest JSON nesting accepted. Durable values are shallow (context is capped at depth 64,
spec 20 §5); the cap keeps every later recursive walk far from Python's recursion limit."""

_REEXPORT: Final = "Re-export the session from its source; a bundle must not be edited by hand."


@dataclass(frozen=True)
class SegmentGroup:
    """One original append: its `segment_closed` and the pins written right after it."""

    segment: SegmentClosed
    pins: tuple[SnapshotPinned, ...]


@dataclass(frozen=True)
class ValidatedBundle:
    """A bundle that passed every check, with what the importer needs precomputed."""

    bundle: Bundle
    groups: tuple[SegmentGroup, ...]
    index: SessionIndex


def _fail(code: Any, message: str, path: str = "", **details: Any) -> Failure[BundleError]:
    return Failure(BundleError(code, message, path, details))


def _entry_invalid(section: str, key: str | int, why: str) -> Failure[BundleError]:
    """BUNDLE_INVALID_FORMAT for one entry of a session's section (`session/events/3`)."""
    where = pointer("session", section, key)
    return _fail("BUNDLE_INVALID_FORMAT", f"{where} {why} " + _REEXPORT, where)


# --- bytes → JSON -------------------------------------------------------------------------


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate object key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode_bundle(raw: bytes, *, max_bytes: int = MAX_BUNDLE_BYTES) -> Result[Any, BundleError]:
    """Size limit, UTF-8 and strict JSON (no duplicate keys, no NaN/Infinity): an ambiguous
    document could mean different things to different readers, so it is refused."""
    if len(raw) > max_bytes:
        return _fail(
            "BUNDLE_TOO_LARGE",
            f"Bundle is {len(raw)} bytes; the limit is {max_bytes} bytes. Export a smaller "
            "session or raise the limit deliberately.",
            "",
            limit=max_bytes,
            size=len(raw),
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fail(
            "BUNDLE_INVALID_FORMAT",
            f"Bundle is not UTF-8 text (byte {exc.start}). " + _REEXPORT,
        )
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        return _fail("BUNDLE_INVALID_FORMAT", f"Bundle is not valid JSON: {exc}. " + _REEXPORT)
    if _depth_exceeds(doc, MAX_DEPTH):
        return _fail(
            "BUNDLE_INVALID_FORMAT",
            f"Bundle nests JSON deeper than {MAX_DEPTH} levels; no session value is that deep. "
            + _REEXPORT,
        )
    return Success(doc)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Iterative, so the check itself cannot hit the recursion limit."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


# --- the checks -----------------------------------------------------------------------------


def validate_bytes(
    raw: bytes, *, max_bytes: int = MAX_BUNDLE_BYTES
) -> Result[ValidatedBundle, BundleError]:
    """Everything the importer checks, on the raw bytes of a bundle file."""
    return decode_bundle(raw, max_bytes=max_bytes).bind(validate_document)


def validate_document(doc: Any) -> Result[ValidatedBundle, BundleError]:
    """Everything the importer checks, on a parsed JSON document."""
    if not isinstance(doc, dict):
        return _fail("BUNDLE_INVALID_FORMAT", "Bundle must be a JSON object. " + _REEXPORT)
    if "bundleSchemaVersion" in doc:
        version = doc["bundleSchemaVersion"]
        if isinstance(version, bool) or version != 1:
            return _fail(
                "BUNDLE_UNSUPPORTED_VERSION",
                f"Unsupported bundle schema version: {json.dumps(version)}. Expected 1. "
                "Import it with the WorkRail version that exported it.",
                "bundleSchemaVersion",
            )
    try:
        bundle = Bundle.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = pointer(*errors[0]["loc"])
        issues = "; ".join(f"{pointer(*e['loc'])}: {e['msg']}" for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        return _fail(
            "BUNDLE_INVALID_FORMAT",
            f"Bundle schema validation failed: {issues}{more}. " + _REEXPORT,
            first,
        )
    return _check_canonical(bundle, doc).bind(check_bundle).bind(_check_meaning)


def _check_meaning(validated: ValidatedBundle) -> Result[ValidatedBundle, BundleError]:
    """Pinned workflows compile, snapshots fit them, tips can be continued (contents.py)."""
    return check_contents(validated.bundle, validated.index).map(lambda _: validated)


def _check_canonical(bundle: Bundle, doc: dict[str, Any]) -> Result[Bundle, BundleError]:
    """The parsed events and records must be exactly the JSON the bundle holds: a value the
    models would coerce (a numeric string, a null optional) would otherwise be stored as
    something other than what integrity vouched for."""
    raw_session = doc["session"]
    parsed = bundle.session_json()
    for section in ("events", "manifest"):
        for i, (raw, model) in enumerate(zip(raw_session[section], parsed[section], strict=True)):
            try:
                same = canonical_bytes(raw) == canonical_bytes(model)
            except CanonicalJsonError as exc:
                return _entry_invalid(section, i, f"is not canonical JSON: {exc}.")
            if not same:
                return _entry_invalid(
                    section,
                    i,
                    "is not in the exact form the store writes (a value of the wrong type, or "
                    "an optional field written as null).",
                )
    return Success(bundle)


def check_bundle(bundle: Bundle) -> Result[ValidatedBundle, BundleError]:
    """The checks after the schema, on a bundle model (also used by the exporter on its own
    output, and by the importer after renaming)."""
    return (
        _check_session(bundle)
        .bind(lambda b: verify(b.integrity.entries, b.session_json()).map(lambda _: b))
        .bind(_check_event_order)
        .bind(_check_manifest)
        .bind(_check_references)
        .bind(_check_replay)
    )


def _check_session(bundle: Bundle) -> Result[Bundle, BundleError]:
    session = bundle.session
    sid = session.sessionId
    if not is_session_id(sid):
        return _fail(
            "BUNDLE_INVALID_FORMAT",
            f"session.sessionId {sid[:60]!r} is not a WorkRail session id (sess_<26 base32>). "
            + _REEXPORT,
            "session/sessionId",
        )
    if not session.events:
        return _fail(
            "BUNDLE_INVALID_FORMAT",
            "Bundle holds no events; there is no session to import. " + _REEXPORT,
            "session/events",
        )
    for i, event in enumerate(session.events):
        if event.sessionId != sid:
            return _fail(
                "BUNDLE_INVALID_FORMAT",
                f"Event {i} belongs to session {event.sessionId}, not {sid}. " + _REEXPORT,
                pointer("session", "events", i, "sessionId"),
            )
    for i, record in enumerate(session.manifest):
        if record.sessionId != sid:
            return _fail(
                "BUNDLE_INVALID_FORMAT",
                f"Manifest record {i} belongs to session {record.sessionId}, not {sid}. "
                + _REEXPORT,
                pointer("session", "manifest", i, "sessionId"),
            )
    for section in ("snapshots", "pinnedWorkflows"):
        table: dict[str, dict[str, Any]] = getattr(session, section)
        for key, value in table.items():
            where = pointer("session", section, key)
            if not is_digest(key):
                return _fail(
                    "BUNDLE_INVALID_FORMAT",
                    f"{where}: key is not a sha256:<64 hex> digest. " + _REEXPORT,
                    where,
                )
            if section == "snapshots":
                problem = _check_snapshot(where, value)
                if problem is not None:
                    return Failure(problem)
    return Success(bundle)


def _check_snapshot(where: str, value: dict[str, Any]) -> BundleError | None:
    """A bundled snapshot parses, and its key is the digest of its canonical bytes."""
    parsed = parse_snapshot(value)
    if isinstance(parsed, Failure):
        return BundleError(
            "BUNDLE_INVALID_FORMAT",
            f"{where} is not a valid execution snapshot: {parsed.failure()}. " + _REEXPORT,
            where,
        )
    try:
        same = parsed.unwrap().snapshot_ref() == digest_of(canonical_bytes(value))
    except CanonicalJsonError as exc:
        return BundleError("BUNDLE_INVALID_FORMAT", f"{where} is not canonical JSON: {exc}", where)
    if not same:
        return BundleError(
            "BUNDLE_INVALID_FORMAT",
            f"{where} is not in the exact form the engine writes. " + _REEXPORT,
            where,
        )
    return None


def _check_event_order(bundle: Bundle) -> Result[Bundle, BundleError]:
    """eventIndex must be exactly 0..n-1 in array order: strictly increasing (the spec's
    check) and without gaps (a gap means events were dropped)."""
    previous = -1
    for i, event in enumerate(bundle.session.events):
        where = pointer("session", "events", i, "eventIndex")
        if event.eventIndex <= previous:
            return _fail(
                "BUNDLE_EVENT_ORDER_INVALID",
                f"Events are not in ascending eventIndex order: event {i} has eventIndex "
                f"{event.eventIndex} after {previous}. " + _REEXPORT,
                where,
            )
        if event.eventIndex != i:
            return _fail(
                "BUNDLE_EVENT_ORDER_INVALID",
                f"eventIndex must be contiguous from 0: event {i} has eventIndex "
                f"{event.eventIndex} (events are missing). " + _REEXPORT,
                where,
            )
        previous = event.eventIndex
    return Success(bundle)


def _check_manifest(bundle: Bundle) -> Result[Bundle, BundleError]:
    """manifestIndex 0..m-1; segments chained from event 0 to the last event; each
    segment's digest equals the bytes its events encode to; each pin sorted, inside its
    segment, naming that segment's node_created; every node pinned. Together these make
    the manifest rebuilt by the append protocol equal to this one."""
    manifest = bundle.session.manifest
    events = bundle.session.events
    for i, record in enumerate(manifest):
        if record.manifestIndex != i:
            return _fail(
                "BUNDLE_MANIFEST_ORDER_INVALID",
                f"Manifest record {i} has manifestIndex {record.manifestIndex}; manifest "
                "records must be in ascending order, contiguous from 0. " + _REEXPORT,
                pointer("session", "manifest", i, "manifestIndex"),
            )
    groups = _groups(manifest)
    if isinstance(groups, BundleError):
        return Failure(groups)
    expected_first = 0
    pinned: set[tuple[int, str, str]] = set()
    for group in groups:
        problem = _check_segment(group.segment, events, expected_first) or _check_pins(
            group, events, pinned
        )
        if problem is not None:
            return Failure(problem)
        expected_first = group.segment.lastEventIndex + 1
    if expected_first != len(events):
        return _fail(
            "BUNDLE_MANIFEST_ORDER_INVALID",
            f"The manifest attests events 0..{expected_first - 1}, but the bundle has "
            f"{len(events)} events. " + _REEXPORT,
            "session/manifest",
        )
    for event in events:
        if isinstance(event, NodeCreated):
            key = (event.eventIndex, event.eventId, event.data.snapshotRef)
            if key not in pinned:
                return _fail(
                    "BUNDLE_MANIFEST_ORDER_INVALID",
                    f"Missing snapshot_pinned for introduced snapshotRef: "
                    f"{key[0]}:{key[1]}:{key[2]}. " + _REEXPORT,
                    pointer("session", "events", event.eventIndex),
                )
    return Success(bundle)


def _check_segment(
    seg: SegmentClosed, events: Sequence[DomainEvent], expected_first: int
) -> BundleError | None:
    """One segment_closed: it starts where the previous one ended, names events the bundle
    has under the path the store would give them, and attests exactly their bytes."""
    at = pointer("session", "manifest", seg.manifestIndex)
    why: str | None = None
    if seg.firstEventIndex != expected_first or seg.lastEventIndex < seg.firstEventIndex:
        why = (
            f"Segment {seg.segmentRelPath} covers events {seg.firstEventIndex}.."
            f"{seg.lastEventIndex}; expected it to start at {expected_first}. Segments must "
            "chain over the events without gaps or overlaps. "
        )
    elif seg.lastEventIndex >= len(events):
        why = (
            f"Segment {seg.segmentRelPath} names event {seg.lastEventIndex}, but the bundle "
            f"has {len(events)} events. "
        )
    elif seg.segmentRelPath != segment_rel_path(seg.firstEventIndex, seg.lastEventIndex):
        why = (
            f"segmentRelPath {seg.segmentRelPath!r} does not name events "
            f"{seg.firstEventIndex}..{seg.lastEventIndex}. "
        )
        at = pointer(at, "segmentRelPath")
    if why is not None:
        return BundleError("BUNDLE_MANIFEST_ORDER_INVALID", why + _REEXPORT, at)
    covered = events[seg.firstEventIndex : seg.lastEventIndex + 1]
    data = b"".join(jsonl_line(e.to_json()) for e in covered)
    if digest_of(data) != seg.sha256 or len(data) != seg.bytes:
        return BundleError(
            "BUNDLE_INTEGRITY_FAILED",
            f"Segment {seg.segmentRelPath} attests {seg.sha256} ({seg.bytes} bytes), but "
            f"its events encode to {digest_of(data)} ({len(data)} bytes). " + _REEXPORT,
            pointer(at, "sha256"),
        )
    return None


def _check_pins(
    group: SegmentGroup, events: Sequence[DomainEvent], pinned: set[tuple[int, str, str]]
) -> BundleError | None:
    """The pins after one segment: sorted as the append protocol writes them, each inside
    the segment and naming its node_created. Adds each good pin to `pinned`."""
    seg = group.segment
    order = [(p.snapshotRef, p.eventIndex, p.createdByEventId) for p in group.pins]
    if order != sorted(order):
        return BundleError(
            "BUNDLE_MANIFEST_ORDER_INVALID",
            f"Pins after segment {seg.segmentRelPath} are not sorted by (snapshotRef, "
            "eventIndex, createdByEventId) as the append protocol writes them. " + _REEXPORT,
            pointer("session", "manifest", seg.manifestIndex),
        )
    for pin in group.pins:
        where = pointer("session", "manifest", pin.manifestIndex)
        if not seg.firstEventIndex <= pin.eventIndex <= seg.lastEventIndex:
            return BundleError(
                "BUNDLE_MANIFEST_ORDER_INVALID",
                f"snapshot_pinned for event {pin.eventIndex} follows segment "
                f"{seg.segmentRelPath}, which does not contain that event. " + _REEXPORT,
                pointer(where, "eventIndex"),
            )
        node = events[pin.eventIndex]
        if not (
            isinstance(node, NodeCreated)
            and node.eventId == pin.createdByEventId
            and node.data.snapshotRef == pin.snapshotRef
        ):
            return BundleError(
                "BUNDLE_MANIFEST_ORDER_INVALID",
                f"snapshot_pinned {pin.eventIndex}:{pin.createdByEventId}:{pin.snapshotRef} "
                "does not match the node_created at that eventIndex. " + _REEXPORT,
                where,
            )
        pinned.add((pin.eventIndex, pin.createdByEventId, pin.snapshotRef))
    return None


def _groups(manifest: Sequence[ManifestRecord]) -> list[SegmentGroup] | BundleError:
    groups: list[SegmentGroup] = []
    segment: SegmentClosed | None = None
    pins: list[SnapshotPinned] = []
    for record in manifest:
        if isinstance(record, SegmentClosed):
            if segment is not None:
                groups.append(SegmentGroup(segment, tuple(pins)))
            segment, pins = record, []
        elif segment is None:
            return BundleError(
                "BUNDLE_MANIFEST_ORDER_INVALID",
                "The manifest starts with a snapshot_pinned record; a pin must follow the "
                "segment_closed of the events it pins. " + _REEXPORT,
                pointer("session", "manifest", record.manifestIndex),
            )
        else:
            pins.append(record)
    if segment is None:
        return BundleError(
            "BUNDLE_MANIFEST_ORDER_INVALID",
            "The manifest has no segment_closed record, so no event is attested. " + _REEXPORT,
            "session/manifest",
        )
    groups.append(SegmentGroup(segment, tuple(pins)))
    return groups


def _check_references(bundle: Bundle) -> Result[Bundle, BundleError]:
    """Every snapshot and workflow the log names is in the bundle, and nothing else is
    (an unreferenced entry would be imported as unaccounted-for content)."""
    session = bundle.session
    for i, event in enumerate(session.events):
        if isinstance(event, NodeCreated) and event.data.snapshotRef not in session.snapshots:
            ref = event.data.snapshotRef
            return _fail(
                "BUNDLE_MISSING_SNAPSHOT",
                f"Snapshot {ref} named by event {i} is not in the bundle. " + _REEXPORT,
                pointer("session", "events", i, "data", "snapshotRef"),
                missingRef=ref,
            )
        if isinstance(event, NodeCreated | RunStarted):
            wf = event.data.workflowHash
            if wf not in session.pinnedWorkflows:
                return _fail(
                    "BUNDLE_MISSING_PINNED_WORKFLOW",
                    f"Pinned workflow {wf} named by event {i} is not in the bundle. " + _REEXPORT,
                    pointer("session", "events", i, "data", "workflowHash"),
                    missingHash=wf,
                )
    snaps, wfs = references([e.to_json() for e in session.events])
    for section, named in (("snapshots", set(snaps)), ("pinnedWorkflows", set(wfs))):
        table: dict[str, Any] = getattr(session, section)
        for key in table:
            if key not in named:
                return _entry_invalid(
                    section,
                    key,
                    "is not referenced by any event; a bundle carries only what its log names.",
                )
    return Success(bundle)


def _check_replay(bundle: Bundle) -> Result[ValidatedBundle, BundleError]:
    """Dedupe keys unique and the run DAG consistent: the same checks the store's loader
    and append path apply, so the import cannot fail halfway through."""
    index = SessionIndex()
    seen: dict[str, int] = {}
    events: Sequence[DomainEvent] = bundle.session.events
    for i, event in enumerate(events):
        where = pointer("session", "events", i)
        if event.dedupeKey in seen:
            return _fail(
                "BUNDLE_EVENT_ORDER_INVALID",
                f"Event {i} repeats the dedupeKey of event {seen[event.dedupeKey]} "
                f"({event.dedupeKey}); each fact is recorded once. " + _REEXPORT,
                pointer(where, "dedupeKey"),
            )
        seen[event.dedupeKey] = i
        try:
            index.apply(event)
        except ProjectionError as exc:
            return _fail(
                "BUNDLE_EVENT_ORDER_INVALID",
                f"Event {i} does not fit the run DAG: {exc}. " + _REEXPORT,
                where,
            )
    for run_id in index.runs:
        try:
            index.preferred_tip(run_id)
        except ProjectionError as exc:
            return _fail(
                "BUNDLE_EVENT_ORDER_INVALID",
                f"Run {run_id} has an inconsistent DAG: {exc}. " + _REEXPORT,
                "session/events",
            )
    groups = _groups(bundle.session.manifest)
    assert not isinstance(groups, BundleError)  # checked by _check_manifest
    return Success(ValidatedBundle(bundle, tuple(groups), index))
