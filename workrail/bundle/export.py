"""Export (spec 60-bundles §3): read a session's truth and wrap it in a bundle.

A healthy session is exported whole. A corrupt_tail session is exported as its validated
prefix — trimmed back to the last append whose nodes are all pinned — and the bundle says
so in `salvage`; nothing is invented. corrupt_head and empty sessions are refused. Every
bundle is run through the import validator before it is returned, so what we export is
exactly what we accept.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from returns.result import Failure, Result, Success

from workrail.bundle.errors import BundleError
from workrail.bundle.integrity import compute_entries, references
from workrail.bundle.models import BUNDLE_SCHEMA_VERSION, Bundle, Salvage, SalvageReason
from workrail.bundle.ports import BundleBackend
from workrail.bundle.validate import check_bundle
from workrail.core.canonical import canonical_bytes
from workrail.core.events import DomainEvent, NodeCreated
from workrail.core.ids import b32_encode16, is_session_id
from workrail.core.manifest import ManifestRecord, SegmentClosed, SnapshotPinned
from workrail.store.errors import StoreError
from workrail.store.ports import PinnedWorkflowStore, SnapshotStore


def bundle_id_of(entropy: bytes) -> str:
    """`bundle_<26 base32>` from 16 random bytes: caller-chosen per spec; random so two
    exports never clash. Pure: the caller brings the randomness."""
    return "bundle_" + b32_encode16(entropy)


def exported_at_of(now: datetime) -> str:
    """`exportedAt` in the reference's form: `2026-11-29T13:12:41.488Z`."""
    now = now.astimezone(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def new_bundle_id() -> str:
    """A bundle id from the OS's randomness, for the shell (the engine uses its own)."""
    return bundle_id_of(os.urandom(16))


def utc_now() -> str:
    """`exportedAt` now, by this host's clock, for the shell (the engine uses its own)."""
    return exported_at_of(datetime.now(UTC))


def bundle_bytes(bundle: Bundle) -> bytes:
    """The bundle file: RFC 8785 canonical JSON, so the same content is the same bytes."""
    return canonical_bytes(bundle.to_json())


def export_session(
    backend: BundleBackend,
    session_id: str,
    *,
    bundle_id: str,
    exported_at: str,
    app_version: str,
    applied_config_hash: str | None = None,
) -> Result[Bundle, BundleError]:
    """The bundle of `session_id`, or why it cannot be exported."""
    if not is_session_id(session_id):
        return Failure(
            BundleError(
                "EXPORT_SESSION_STORE_ERROR",
                f"{session_id[:60]!r} is not a session id (sess_<26 base32>); list sessions "
                "to find the right one.",
                session_id[:60],
            )
        )
    loaded = _load(backend, session_id)
    if isinstance(loaded, BundleError):
        return Failure(loaded)
    events, manifest, salvage = loaded
    if not events:
        what = "its validated prefix is empty" if salvage else "it has no events"
        return Failure(
            BundleError(
                "EXPORT_BUILD_FAILED",
                f"Session {session_id} cannot be exported: {what} (a never-created session or "
                "the empty directory of a failed start has nothing to carry).",
                session_id,
                {"reason": "BUNDLE_BUILD_EMPTY_EVENTS"},
            )
        )
    session = _session_doc(backend, session_id, events, manifest)
    if isinstance(session, BundleError):
        return Failure(session)
    producer: dict[str, Any] = {"appVersion": app_version}
    if applied_config_hash is not None:
        producer["appliedConfigHash"] = applied_config_hash
    doc: dict[str, Any] = {
        "bundleSchemaVersion": BUNDLE_SCHEMA_VERSION,
        "bundleId": bundle_id,
        "exportedAt": exported_at,
        "producer": producer,
        "integrity": {
            "kind": "sha256_manifest_v1",
            "entries": [e.to_json() for e in compute_entries(session)],
        },
        "session": session,
    }
    if salvage is not None:
        doc["salvage"] = salvage.to_json()
    return _checked(doc, session_id)


def _session_doc(
    backend: BundleBackend,
    session_id: str,
    events: Sequence[DomainEvent],
    manifest: Sequence[ManifestRecord],
) -> dict[str, Any] | BundleError:
    """The bundle's `session`: the log plus every snapshot and pinned workflow it names."""
    event_json = [e.to_json() for e in events]
    snapshot_refs, workflow_hashes = references(event_json)
    snapshots = _collect(backend.snapshots, snapshot_refs, "snapshot", session_id)
    if isinstance(snapshots, BundleError):
        return snapshots
    pinned = _collect(backend.pinned, workflow_hashes, "pinned workflow", session_id)
    if isinstance(pinned, BundleError):
        return pinned
    return {
        "sessionId": session_id,
        "events": event_json,
        "manifest": [r.to_json() for r in manifest],
        "snapshots": snapshots,
        "pinnedWorkflows": pinned,
    }


def _checked(doc: dict[str, Any], session_id: str) -> Result[Bundle, BundleError]:
    """The bundle, once it passes the import validator: what we export, we accept."""
    try:
        bundle = Bundle.model_validate(doc)
    except ValueError as exc:
        return Failure(
            BundleError("EXPORT_BUILD_FAILED", f"Bundle envelope is invalid: {exc}", session_id)
        )
    checked = check_bundle(bundle)
    if isinstance(checked, Failure):
        problem = checked.failure()
        return Failure(
            BundleError(
                "EXPORT_BUILD_FAILED",
                f"Session {session_id} does not form an importable bundle: {problem.message}",
                problem.path,
                {"bundleError": problem.to_json()},
            )
        )
    return Success(bundle)


_Loaded = tuple[tuple[DomainEvent, ...], tuple[ManifestRecord, ...], Salvage | None]


def _load(backend: BundleBackend, session_id: str) -> _Loaded | BundleError:
    """Strict load; for corrupt_tail only, the trimmed validated prefix plus the marker."""
    result = backend.sessions.read(session_id, lambda log: (tuple(log.events), tuple(log.manifest)))
    if isinstance(result, Success):
        events, manifest = result.unwrap()
        return events, manifest, None
    error: StoreError = result.failure()
    health = error.health
    if health is None or health.kind != "corrupt_tail" or health.reason is None:
        details: dict[str, Any] = {"storeCode": error.code}
        if health is not None:
            details["health"] = health.to_json()
        return BundleError(
            "EXPORT_SESSION_STORE_ERROR",
            f"Session {session_id} cannot be read ({error.code}: {error.message}). A session "
            "corrupt at its head holds no trustworthy prefix to export.",
            session_id,
            details,
        )
    loaded = backend.sessions.load_prefix(session_id)
    if isinstance(loaded, Failure):
        problem = loaded.failure()
        return BundleError(
            "EXPORT_SESSION_STORE_ERROR",
            f"Session {session_id} cannot be read ({problem.code}: {problem.message}).",
            session_id,
            {"storeCode": problem.code},
        )
    prefix = loaded.unwrap()
    events, manifest = pinned_prefix(prefix.events, prefix.manifest)
    reason = health.reason
    return events, manifest, Salvage(reason=SalvageReason(code=reason.code, message=reason.message))


def pinned_prefix(
    events: Sequence[DomainEvent], manifest: Sequence[ManifestRecord]
) -> tuple[tuple[DomainEvent, ...], tuple[ManifestRecord, ...]]:
    """The longest run of whole appends (segment_closed + its pins) whose nodes are all
    pinned — a salvage load does not check pins, a bundle must."""
    kept_events = 0
    kept_records = 0
    position = 0
    while position < len(manifest):
        segment = manifest[position]
        if not isinstance(segment, SegmentClosed) or segment.firstEventIndex != kept_events:
            break
        end = position + 1
        while end < len(manifest) and isinstance(manifest[end], SnapshotPinned):
            end += 1
        if segment.lastEventIndex >= len(events):
            break
        pins = {
            (r.eventIndex, r.createdByEventId, r.snapshotRef)
            for r in manifest[position + 1 : end]
            if isinstance(r, SnapshotPinned)
        }
        covered = events[segment.firstEventIndex : segment.lastEventIndex + 1]
        if any(
            isinstance(e, NodeCreated) and (e.eventIndex, e.eventId, e.data.snapshotRef) not in pins
            for e in covered
        ):
            break
        kept_events, kept_records, position = segment.lastEventIndex + 1, end, end
    return tuple(events[:kept_events]), tuple(manifest[:kept_records])


def _collect(
    store: SnapshotStore | PinnedWorkflowStore, refs: list[str], what: str, session_id: str
) -> dict[str, dict[str, Any]] | BundleError:
    out: dict[str, dict[str, Any]] = {}
    prefix = "EXPORT_SNAPSHOT" if what == "snapshot" else "EXPORT_PINNED_WORKFLOW"
    for ref in refs:
        got = store.get(ref)
        if isinstance(got, Failure):
            error: StoreError = got.failure()
            return BundleError(
                "EXPORT_SNAPSHOT_STORE_ERROR"
                if prefix == "EXPORT_SNAPSHOT"
                else "EXPORT_PINNED_WORKFLOW_STORE_ERROR",
                f"The {what} {ref} of session {session_id} cannot be read: {error.message}",
                ref,
            )
        value = got.unwrap()
        if value is None:
            return BundleError(
                "EXPORT_MISSING_SNAPSHOT"
                if prefix == "EXPORT_SNAPSHOT"
                else "EXPORT_MISSING_PINNED_WORKFLOW",
                f"The {what} {ref} named by session {session_id} is missing from the data "
                "directory; the session cannot be exported complete.",
                ref,
                {"missingRef": ref},
            )
        out[ref] = value
    return out
