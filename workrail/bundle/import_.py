"""Import (spec 60-bundles §5): validate everything, then store the session as new truth.

Order: validate (pure; a rejected bundle writes nothing) → choose the target id (the
bundle's own id when it is free locally, else a freshly minted one, never a merge) →
store snapshots and pinned workflows (content-addressed, idempotent) → re-append the
events through the normal append protocol, one plan per original segment with the pins
that followed it, inside a single writer call → strict-load the result and compare it to
the bundle. eventIds are kept: they are opaque, and keeping them keeps `cause.eventId`
and pin `createdByEventId` references intact.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from returns.result import Failure, Result, Success

from workrail.bundle.errors import BundleError, ErrorCode
from workrail.bundle.models import Bundle, Salvage
from workrail.bundle.ports import BundleBackend
from workrail.bundle.rename import rename_session
from workrail.bundle.validate import (
    MAX_BUNDLE_BYTES,
    ValidatedBundle,
    check_bundle,
    validate_bytes,
)
from workrail.core.canonical import canonical_bytes
from workrail.core.ids import is_session_id
from workrail.store.errors import StoreError
from workrail.store.ports import (
    AppendPlan,
    PinnedWorkflowStore,
    SessionLog,
    SnapshotPin,
    SnapshotStore,
    WriteTxn,
)

MINT_ATTEMPTS: Final = 3


@dataclass(frozen=True)
class ImportedRun:
    """Where an agent continues: the run's preferred tip (spec 70 §2) and its workflow."""

    run_id: str
    preferred_tip_node_id: str | None
    workflow_hash: str

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "preferredTipNodeId": self.preferred_tip_node_id,
            "workflowHash": self.workflow_hash,
        }


@dataclass(frozen=True)
class ImportResult:
    session_id: str
    original_session_id: str
    renamed: bool
    runs: tuple[ImportedRun, ...]
    event_count: int
    snapshot_count: int
    pinned_workflow_count: int
    salvage: Salvage | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sessionId": self.session_id,
            "originalSessionId": self.original_session_id,
            "renamed": self.renamed,
            "runs": [r.to_json() for r in self.runs],
            "eventCount": self.event_count,
            "snapshotCount": self.snapshot_count,
            "pinnedWorkflowCount": self.pinned_workflow_count,
        }
        if self.salvage is not None:
            out["salvage"] = self.salvage.to_json()
        return out


class _Taken:
    """The target id was claimed by someone else between our check and our write."""


def read_bundle_file(
    source: Path | BinaryIO, *, max_bytes: int = MAX_BUNDLE_BYTES
) -> Result[bytes, BundleError]:
    """The raw bytes of a bundle, refusing anything over the limit before reading it all."""
    name = str(source) if isinstance(source, Path) else "<stream>"
    try:
        if isinstance(source, Path):
            size = source.stat().st_size
            if size > max_bytes:
                return Failure(_too_large(size, max_bytes, name))
            with source.open("rb") as f:
                raw = f.read(max_bytes + 1)
        else:
            raw = source.read(max_bytes + 1)
    except OSError as exc:
        return Failure(
            BundleError(
                "IMPORT_READ_FAILED",
                f"Cannot read the bundle: {exc.strerror or exc}. Check the path and permissions.",
                name,
            )
        )
    if len(raw) > max_bytes:
        return Failure(_too_large(len(raw), max_bytes, name))
    return Success(raw)


def _too_large(size: int, limit: int, name: str) -> BundleError:
    return BundleError(
        "BUNDLE_TOO_LARGE",
        f"Bundle is {'over ' if size > limit else ''}{size} bytes; the limit is {limit} bytes. "
        "Export a smaller session or raise the limit deliberately.",
        name,
        {"limit": limit},
    )


def import_bundle(
    backend: BundleBackend,
    raw: bytes,
    *,
    mint_session_id: Callable[[], str],
    max_bytes: int = MAX_BUNDLE_BYTES,
) -> Result[ImportResult, BundleError]:
    """Validate `raw` completely, then store it as a new session (see the module doc)."""
    validated = validate_bytes(raw, max_bytes=max_bytes)
    if isinstance(validated, Failure):
        return Failure(validated.failure())
    return import_validated(backend, validated.unwrap(), mint_session_id=mint_session_id)


def import_validated(
    backend: BundleBackend,
    validated: ValidatedBundle,
    *,
    mint_session_id: Callable[[], str],
) -> Result[ImportResult, BundleError]:
    """Store an already validated bundle. `mint_session_id` is the caller's (the engine's
    randomness): it names the session when the bundle's own id is taken here."""
    original = validated.bundle.session.sessionId
    taken: set[str] = set()
    target = validated
    for _attempt in range(MINT_ATTEMPTS):
        target_id = target.bundle.session.sessionId
        exists = backend.sessions.exists(target_id)
        if isinstance(exists, Failure):
            return Failure(_store_error(exists.failure(), target_id))
        if exists.unwrap():
            taken.add(target_id)
        if target_id in taken:
            renamed = _renamed(backend, validated, mint_session_id, taken)
            if isinstance(renamed, BundleError):
                return Failure(renamed)
            target = renamed
            continue
        stored = _store_content(backend, target.bundle)
        if stored is not None:
            return Failure(stored)
        written = backend.sessions.write(target_id, functools.partial(_append_all, plans=target))
        if isinstance(written, Failure):
            problem = written.failure()
            if isinstance(problem, _Taken):
                taken.add(target_id)
                continue
            return Failure(_store_error(problem, target_id))
        return _read_back(backend, target, original)
    return Failure(
        BundleError(
            "IMPORT_SESSION_STORE_ERROR",
            f"Could not find a free session id after {MINT_ATTEMPTS} attempts; other imports "
            "are racing for the same ids. Retry the import.",
            original,
        )
    )


def already_here(
    backend: BundleBackend, validated: ValidatedBundle
) -> Result[str | None, BundleError]:
    """The id under which this store already holds exactly the bundle's session (its own
    id, with the same events and manifest), or None. An import of the same bundle again
    would only make a copy under a new id, which a person rarely means."""
    original = validated.bundle.session.sessionId
    exists = backend.sessions.exists(original)
    if isinstance(exists, Failure):
        return Failure(_store_error(exists.failure(), original))
    if not exists.unwrap():
        return Success(None)
    expected = validated.bundle.session_json()
    wanted = (canonical_bytes(expected["events"]), canonical_bytes(expected["manifest"]))

    def same(log: SessionLog) -> bool:
        held = (
            canonical_bytes([e.to_json() for e in log.events]),
            canonical_bytes([r.to_json() for r in log.manifest]),
        )
        return held == wanted

    found = backend.sessions.read(original, same)
    # a damaged session under the id is not this bundle: the import makes a copy
    return Success(original if found.value_or(False) else None)


def _renamed(
    backend: BundleBackend,
    validated: ValidatedBundle,
    mint: Callable[[], str],
    taken: set[str],
) -> ValidatedBundle | BundleError:
    new_id = mint()
    free = is_session_id(new_id) and new_id not in taken
    if not free or backend.sessions.exists(new_id).value_or(True):
        return BundleError(
            "IMPORT_SESSION_STORE_ERROR",
            f"The minted session id {new_id[:60]!r} is not a free, well-formed session id.",
            validated.bundle.session.sessionId,
        )
    checked = check_bundle(rename_session(validated.bundle, new_id))
    if isinstance(checked, Failure):
        inner = checked.failure()
        return BundleError(
            "IMPORT_SESSION_STORE_ERROR",
            f"Renaming the session to {new_id} produced an invalid bundle: {inner.message}",
            inner.path,
        )
    return checked.unwrap()


def _store_content(backend: BundleBackend, bundle: Bundle) -> BundleError | None:
    """Snapshots and pinned workflows first: the log must never name content that is not
    stored (an unreferenced CAS entry, left if a later step fails, is harmless)."""
    session = bundle.session
    return _put_all(
        backend.snapshots, session.snapshots, "IMPORT_SNAPSHOT_STORE_ERROR", "snapshot"
    ) or _put_all(
        backend.pinned, session.pinnedWorkflows, "IMPORT_PINNED_WORKFLOW_STORE_ERROR", "workflow"
    )


def _put_all(
    store: SnapshotStore | PinnedWorkflowStore,
    items: Mapping[str, Any],
    code: ErrorCode,
    noun: str,
) -> BundleError | None:
    """Put every value into a content-addressed store and check it lands under its key."""
    for ref, value in items.items():
        put = store.put(value)
        if isinstance(put, Failure):
            problem = put.failure()
            details: dict[str, Any] = {"storeCode": problem.code}
            if problem.retryable:
                details["retryable"] = True
            return BundleError(code, f"Cannot store {noun} {ref}: {problem.message}", ref, details)
        stored = put.unwrap()
        if stored != ref:
            return BundleError(code, f"{noun.capitalize()} {ref} was stored as {stored}", ref)
    return None


def _append_all(txn: WriteTxn, *, plans: ValidatedBundle) -> Result[int, StoreError | _Taken]:
    """One append plan per original segment, with the pins that followed it."""
    if txn.log.count:
        return Failure(_Taken())
    events = plans.bundle.session.events
    for group in plans.groups:
        seg = group.segment
        plan = AppendPlan(
            events=tuple(events[seg.firstEventIndex : seg.lastEventIndex + 1]),
            pins=tuple(
                SnapshotPin(p.snapshotRef, p.eventIndex, p.createdByEventId) for p in group.pins
            ),
        )
        appended = txn.append(plan)
        if isinstance(appended, Failure):
            return Failure(appended.failure())
    return Success(len(events))


def _store_error(error: StoreError, session_id: str) -> BundleError:
    details: dict[str, Any] = {"storeCode": error.code}
    if error.health is not None:
        details["health"] = error.health.to_json()
    hint = ""
    if error.retryable:
        details["retryable"] = True
        hint = " The session was not stored; retry the import later."
    return BundleError(
        "IMPORT_SESSION_STORE_ERROR",
        f"Writing session {session_id} failed ({error.code}: {error.message}).{hint}",
        session_id,
        details,
    )


def _read_back(
    backend: BundleBackend, target: ValidatedBundle, original: str
) -> Result[ImportResult, BundleError]:
    """Strict-load what was written and require it to equal the bundle's truth."""
    bundle = target.bundle
    session_id = bundle.session.sessionId

    def summary(log: SessionLog) -> tuple[bytes, bytes, tuple[ImportedRun, ...]]:
        runs = tuple(
            ImportedRun(run_id, log.index.preferred_tip(run_id), run.started.data.workflowHash)
            for run_id, run in log.index.runs.items()
        )
        return (
            canonical_bytes([e.to_json() for e in log.events]),
            canonical_bytes([r.to_json() for r in log.manifest]),
            runs,
        )

    loaded = backend.sessions.read(session_id, summary)
    if isinstance(loaded, Failure):
        return Failure(_store_error(loaded.failure(), session_id))
    events, manifest, runs = loaded.unwrap()
    expected = bundle.session_json()
    if events != canonical_bytes(expected["events"]) or manifest != canonical_bytes(
        expected["manifest"]
    ):
        return Failure(
            BundleError(
                "IMPORT_SESSION_STORE_ERROR",
                f"Session {session_id} was written but does not read back equal to the bundle; "
                "do not use it, and report this as a bug.",
                session_id,
            )
        )
    return Success(
        ImportResult(
            session_id=session_id,
            original_session_id=original,
            renamed=session_id != original,
            runs=runs,
            event_count=len(bundle.session.events),
            snapshot_count=len(bundle.session.snapshots),
            pinned_workflow_count=len(bundle.session.pinnedWorkflows),
            salvage=bundle.salvage,
        )
    )
