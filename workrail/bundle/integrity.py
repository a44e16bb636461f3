"""`sha256_manifest_v1` integrity entries (spec 60-bundles §2). Pure.

The spec's verifier checks only the entries a bundle lists, so a bundle that drops an
entry, or changes a section nobody listed, would pass it. Here every section must be
covered by exactly one entry — the events, the manifest, each snapshot and each pinned
workflow — and any other path is rejected: a bundle that verifies cannot carry truth its
integrity list does not vouch for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.bundle.errors import BundleError, pointer
from workrail.bundle.models import IntegrityEntry
from workrail.core.canonical import CanonicalJsonError, canonical_bytes, sha256_digest

EVENTS_PATH: Final = "session/events"
MANIFEST_PATH: Final = "session/manifest"
SNAPSHOTS_PREFIX: Final = "session/snapshots/"
PINNED_PREFIX: Final = "session/pinnedWorkflows/"

_REEXPORT: Final = "Re-export the session from its source; a bundle must not be edited by hand."


def snapshot_entry_path(ref: str) -> str:
    return SNAPSHOTS_PREFIX + ref


def pinned_entry_path(workflow_hash: str) -> str:
    return PINNED_PREFIX + workflow_hash


def references(events: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """Snapshot refs and workflow hashes in order of first reference in the log — the
    order the exporter lists them (spec 60 §2)."""
    snapshots: dict[str, None] = {}
    workflows: dict[str, None] = {}
    for event in events:
        data = event.get("data")
        if not isinstance(data, Mapping):
            continue
        kind = event.get("kind")
        if kind == "node_created":
            ref = data.get("snapshotRef")
            if isinstance(ref, str):
                snapshots.setdefault(ref)
        if kind in ("node_created", "run_started"):
            wf = data.get("workflowHash")
            if isinstance(wf, str):
                workflows.setdefault(wf)
    return list(snapshots), list(workflows)


def entry_paths(session: Mapping[str, Any]) -> list[str]:
    """Every path a complete integrity list covers, in the exporter's order; snapshots and
    workflows nobody references (which validation rejects anyway) go last, sorted."""
    snaps, wfs = references(session.get("events", []))
    snaps += sorted(set(session.get("snapshots", {})) - set(snaps))
    wfs += sorted(set(session.get("pinnedWorkflows", {})) - set(wfs))
    return [
        EVENTS_PATH,
        MANIFEST_PATH,
        *(snapshot_entry_path(s) for s in snaps if s in session.get("snapshots", {})),
        *(pinned_entry_path(w) for w in wfs if w in session.get("pinnedWorkflows", {})),
    ]


_MISSING: Final = object()


def resolve(session: Mapping[str, Any], path: str) -> Any:
    """The value an integrity path names, or `_MISSING` for an unknown path or absent key."""
    if path == EVENTS_PATH:
        return session.get("events", _MISSING)
    if path == MANIFEST_PATH:
        return session.get("manifest", _MISSING)
    for prefix, section in ((SNAPSHOTS_PREFIX, "snapshots"), (PINNED_PREFIX, "pinnedWorkflows")):
        if path.startswith(prefix):
            table = session.get(section)
            if not isinstance(table, Mapping):
                return _MISSING
            return table.get(path[len(prefix) :], _MISSING)
    return _MISSING


def compute_entries(session: Mapping[str, Any]) -> list[IntegrityEntry]:
    """The complete integrity list for a `session` section (raises CanonicalJsonError for a
    value that is not canonical JSON; the exporter only holds values that are)."""
    entries = []
    for path in entry_paths(session):
        data = canonical_bytes(resolve(session, path))
        entries.append(IntegrityEntry(path=path, sha256=sha256_digest(data), bytes=len(data)))
    return entries


def verify(
    entries: Iterable[IntegrityEntry], session: Mapping[str, Any]
) -> Result[None, BundleError]:
    """Check every listed entry (spec order), then that the list covers every section
    exactly once, then that each snapshot and workflow hashes to its own key."""
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        where = pointer("integrity", "entries", i)
        if entry.path in seen:
            return Failure(
                _integrity_failed(
                    f"Duplicate integrity entry for {entry.path} (also entry {seen[entry.path]}).",
                    where,
                )
            )
        seen[entry.path] = i
        problem = _check_entry(entry, session, where)
        if problem is not None:
            return Failure(problem)
    for path in entry_paths(session):
        if path not in seen:
            return Failure(
                _integrity_failed(
                    f"No integrity entry covers {path}; every section of a bundle must be "
                    "listed so that nothing unverified is imported.",
                    path,
                )
            )
    for prefix, section in ((SNAPSHOTS_PREFIX, "snapshots"), (PINNED_PREFIX, "pinnedWorkflows")):
        for key, value in session.get(section, {}).items():
            actual = sha256_digest(canonical_bytes(value))
            if actual != key:
                return Failure(
                    _integrity_failed(
                        f"{prefix}{key} hashes to {actual}, not to its key: content-addressed "
                        "entries must be stored under their own digest.",
                        prefix + key,
                    )
                )
    return Success(None)


def _integrity_failed(why: str, path: str) -> BundleError:
    return BundleError("BUNDLE_INTEGRITY_FAILED", f"{why} " + _REEXPORT, path)


def _check_entry(
    entry: IntegrityEntry, session: Mapping[str, Any], where: str
) -> BundleError | None:
    """One entry: its path exists, and the canonical bytes there have its digest and size."""
    value = resolve(session, entry.path)
    if value is _MISSING:
        return _integrity_failed(
            f"Integrity path not found in bundle: {entry.path}.", pointer(where, "path")
        )
    try:
        data = canonical_bytes(value)
    except CanonicalJsonError as exc:
        return BundleError(
            "BUNDLE_INVALID_FORMAT",
            f"{entry.path} is not canonical JSON: {exc}. " + _REEXPORT,
            entry.path,
        )
    actual = sha256_digest(data)
    if actual != entry.sha256:
        return _integrity_failed(
            f"Integrity mismatch for {entry.path}: expected {entry.sha256}, got {actual}. "
            "The bundle was altered or damaged in transit.",
            pointer(where, "sha256"),
        )
    if len(data) != entry.bytes:
        return _integrity_failed(
            f"Byte length mismatch for {entry.path}: expected {entry.bytes}, got {len(data)}.",
            pointer(where, "bytes"),
        )
    return None
