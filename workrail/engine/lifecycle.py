"""Tidying sessions, for people (the CLI and the console; no MCP tool deletes): archive and
unarchive, delete, and prune — delete what is old, then collect the snapshots and pinned
workflows no kept session references (mark and sweep, spec 70 §8).

Safety rules the collector keeps:
- it runs only when every kept session validates (one that does not might reference
  content nobody can see: collecting then could destroy what a repair needs);
- each session is deleted while holding its writer, so one being written is never
  deleted from under its writer (it is reported busy and kept);
- prune's age test holds at the moment of deletion: the store reads the session's last
  activity again under that writer, so a session advanced after it was listed (an
  acknowledged advance) is kept and reported active, never deleted;
- content stored or re-stored within `grace` is never collected (a start or advance puts
  its snapshot before the append that pins it), and the kept sessions' pins are marked a
  second time just before the sweep, so an append that landed meanwhile is seen;
- each entry is then deleted only if the store still holds it as stored before the cutoff
  (one conditional step in the store), so content a start or advance stored again after
  it was listed — for an append that lands after the second mark — is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.lifecycle import SessionLifecycle
from workrail.core.manifest import SnapshotPinned
from workrail.core.summary import RunStatus, SessionSummary
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError
from workrail.engine.sessions import (
    parse_statuses,
    resolve_ids,
    store_failure,
    validation,
)
from workrail.engine.store_errors import is_busy
from workrail.store.errors import StoreError
from workrail.store.ports import QUERY_PAGE_MAX, ContentStore, SessionFilter, SessionLog

GC_GRACE: Final = timedelta(hours=1)


@dataclass(frozen=True)
class LifecycleChange:
    """What archive / unarchive / delete did, per session."""

    changed: tuple[str, ...]
    unchanged: tuple[str, ...] = ()
    """Already in the asked-for state (archive of an archived session)."""
    busy: tuple[str, ...] = ()
    """Being written right now: left as they were; try again."""

    def to_json(self) -> dict[str, Any]:
        return {
            "changed": list(self.changed),
            "unchanged": list(self.unchanged),
            "busy": list(self.busy),
        }


def set_archived(
    deps: EngineDeps, session_ids: Sequence[str], archived: bool
) -> Result[LifecycleChange, EngineError]:
    resolved = resolve_ids(deps, session_ids)
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    changed: list[str] = []
    unchanged: list[str] = []
    busy: list[str] = []
    stamp = deps.clock().isoformat(timespec="seconds").replace("+00:00", "Z")
    for sid in resolved.unwrap():
        current = deps.lifecycle.get(sid)
        if isinstance(current, Failure):
            return Failure(store_failure(current.failure()))
        before = current.unwrap()
        after = before.archive(stamp) if archived else before.unarchive()
        if after == before:
            unchanged.append(sid)
            continue
        written = deps.lifecycle.put(sid, after)
        if isinstance(written, Failure):
            if is_busy(written.failure()):
                busy.append(sid)
                continue
            return Failure(store_failure(written.failure()))
        changed.append(sid)
    return Success(LifecycleChange(tuple(changed), tuple(unchanged), tuple(busy)))


def delete_sessions(
    deps: EngineDeps, session_ids: Sequence[str]
) -> Result[LifecycleChange, EngineError]:
    """Every id is resolved first: one unknown or ambiguous id deletes nothing."""
    resolved = resolve_ids(deps, session_ids)
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    return _delete(deps, resolved.unwrap())


def _delete(deps: EngineDeps, session_ids: Sequence[str]) -> Result[LifecycleChange, EngineError]:
    deleted: list[str] = []
    gone: list[str] = []
    busy: list[str] = []
    for sid in session_ids:
        removed = deps.sessions.delete(sid)
        if isinstance(removed, Failure):
            if is_busy(removed.failure()):
                busy.append(sid)
                continue
            return Failure(store_failure(removed.failure()))
        (deleted if removed.unwrap() else gone).append(sid)
    return Success(LifecycleChange(tuple(deleted), tuple(gone), tuple(busy)))


# --- prune and collect -------------------------------------------------------------------


@dataclass(frozen=True)
class PruneRequest:
    older_than: timedelta
    statuses: Sequence[str] = ()
    dry_run: bool = False
    grace: timedelta = GC_GRACE


@dataclass(frozen=True)
class Collection:
    """What the mark-and-sweep found and removed (or, on a dry run, would remove)."""

    snapshots: tuple[str, ...] = ()
    pinned_workflows: tuple[str, ...] = ()
    skipped_reason: str | None = None
    """Why nothing was collected (a session that does not validate), if so."""

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshots": len(self.snapshots),
            "pinnedWorkflows": len(self.pinned_workflows),
            "skippedReason": self.skipped_reason,
        }


@dataclass(frozen=True)
class PruneReport:
    selected: tuple[SessionSummary, ...]
    deleted: tuple[str, ...]
    busy: tuple[str, ...]
    collected: Collection
    dry_run: bool
    older_than: timedelta = field(default=timedelta(0))
    active: tuple[str, ...] = ()
    """Selected as old, then written before their turn came: kept."""

    def to_json(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "olderThanSeconds": int(self.older_than.total_seconds()),
            "selected": [s.session_id for s in self.selected],
            "deleted": list(self.deleted),
            "busy": list(self.busy),
            "keptActive": list(self.active),
            "collected": self.collected.to_json(),
        }


def prune(deps: EngineDeps, request: PruneRequest) -> Result[PruneReport, EngineError]:
    if request.older_than <= timedelta(0):
        return Failure(
            validation(
                "prune needs a positive age: sessions older than what?",
                "Pass --older-than, e.g. --older-than 30d (units: m, h, d, w).",
                field="olderThan",
            )
        )
    parsed = parse_statuses(request.statuses)
    if isinstance(parsed, Failure):
        return Failure(parsed.failure())
    cutoff = deps.clock() - request.older_than
    selected = _older_than(deps, cutoff, parsed.unwrap())
    if isinstance(selected, Failure):
        return Failure(selected.failure())
    chosen = selected.unwrap()
    if request.dry_run:
        would = _collect(
            deps, request.grace, forget=frozenset(s.session_id for s in chosen), dry=True
        )
        if isinstance(would, Failure):
            return Failure(would.failure())
        return Success(PruneReport(chosen, (), (), would.unwrap(), True, request.older_than))
    deleted: list[str] = []
    busy: list[str] = []
    active: list[str] = []
    for summary in chosen:
        removed = deps.sessions.delete_idle(summary.session_id, idle_before=cutoff)
        if isinstance(removed, Failure):
            if is_busy(removed.failure()):
                busy.append(summary.session_id)
                continue
            return Failure(store_failure(removed.failure()))
        match removed.unwrap():
            case "deleted":
                deleted.append(summary.session_id)
            case "active":
                active.append(summary.session_id)
            case "absent":
                pass
    collected = _collect(deps, request.grace, forget=frozenset(), dry=False)
    if isinstance(collected, Failure):
        return Failure(collected.failure())
    return Success(
        PruneReport(
            chosen,
            tuple(deleted),
            tuple(busy),
            collected.unwrap(),
            False,
            request.older_than,
            tuple(active),
        )
    )


def _older_than(
    deps: EngineDeps, cutoff: Any, statuses: frozenset[RunStatus]
) -> Result[tuple[SessionSummary, ...], EngineError]:
    """Sessions (archived ones too) last active before `cutoff`; the listing is newest
    first, so the old ones are the tail: page on, keep the old."""
    found: list[SessionSummary] = []
    cursor = None
    where = SessionFilter(statuses=statuses, archived="include")
    while True:
        page = deps.query.page(where, limit=QUERY_PAGE_MAX, cursor=cursor)
        if isinstance(page, Failure):
            return Failure(store_failure(page.failure()))
        for summary in page.unwrap().summaries:
            moment = summary.last_activity
            if moment is not None and moment < cutoff:
                found.append(summary)
        cursor = page.unwrap().next_cursor
        if cursor is None:
            return Success(tuple(found))


def _collect(
    deps: EngineDeps, grace: timedelta, *, forget: frozenset[str], dry: bool
) -> Result[Collection, EngineError]:
    """Mark from every kept session's pins (`forget`: sessions about to be deleted, for a
    dry run), sweep what is unmarked and older than `grace`."""
    marked = _mark(deps, forget)
    if isinstance(marked, Failure):
        return Failure(marked.failure())
    first = marked.unwrap()
    if first.unsafe is not None:
        return Success(Collection(skipped_reason=first.unsafe))
    cutoff = deps.clock() - grace
    snapshot_candidates = _unmarked(deps.snapshots, first.refs, cutoff)
    pinned_candidates = _unmarked(deps.pinned, first.hashes, cutoff)
    if isinstance(snapshot_candidates, Failure):
        return Failure(snapshot_candidates.failure())
    if isinstance(pinned_candidates, Failure):
        return Failure(pinned_candidates.failure())
    if dry:
        return Success(
            Collection(tuple(snapshot_candidates.unwrap()), tuple(pinned_candidates.unwrap()))
        )
    again = _mark(deps, forget)  # appends may have landed since the first mark
    if isinstance(again, Failure):
        return Failure(again.failure())
    second = again.unwrap()
    if second.unsafe is not None:
        return Success(Collection(skipped_reason=second.unsafe))
    removed: tuple[list[str], list[str]] = ([], [])
    doomed = (
        (deps.snapshots, [r for r in snapshot_candidates.unwrap() if r not in second.refs]),
        (deps.pinned, [h for h in pinned_candidates.unwrap() if h not in second.hashes]),
    )
    for (store, refs), out in zip(doomed, removed, strict=True):
        for ref in refs:
            # Only if still old: a start or advance may have stored it again since it was
            # listed, for an append that lands after the second mark.
            gone = store.delete(ref, stored_before=cutoff)
            if isinstance(gone, Failure):
                return Failure(store_failure(gone.failure()))
            if gone.unwrap():
                out.append(ref)
    return Success(Collection(tuple(removed[0]), tuple(removed[1])))


@dataclass
class _Marks:
    """What the kept sessions reference; `unsafe` says which session does not validate
    when one does not (then nothing may be collected)."""

    refs: set[str] = field(default_factory=set)
    hashes: set[str] = field(default_factory=set)
    unsafe: str | None = None


def _mark(deps: EngineDeps, forget: frozenset[str]) -> Result[_Marks, EngineError]:
    marks = _Marks()
    after: str | None = None
    while True:
        page = deps.sessions.list_ids(after=after)
        if isinstance(page, Failure):
            return Failure(store_failure(page.failure()))
        ids = page.unwrap()
        if not ids:
            return Success(marks)
        for sid in ids:
            if sid in forget:
                continue
            read = deps.sessions.read(sid, _pins_of)
            if isinstance(read, Failure):
                error: StoreError = read.failure()
                if error.health is not None:
                    marks.unsafe = (
                        f"session {sid} does not validate ({error.health.kind}); nothing is "
                        "collected until it is repaired, or exported and deleted"
                    )
                    return Success(marks)
                return Failure(store_failure(error))
            found_refs, found_hashes = read.unwrap()
            marks.refs |= found_refs
            marks.hashes |= found_hashes
        after = ids[-1]


def _pins_of(log: SessionLog) -> tuple[set[str], set[str]]:
    refs = {r.snapshotRef for r in log.manifest if isinstance(r, SnapshotPinned)}
    hashes: set[str] = set()
    for node in log.index.nodes.values():
        refs.add(node.data.snapshotRef)
        hashes.add(node.data.workflowHash)
    for run in log.index.runs.values():
        hashes.add(run.started.data.workflowHash)
    return refs, hashes


def _unmarked(store: ContentStore, marked: set[str], cutoff: Any) -> Result[list[str], EngineError]:
    out: list[str] = []
    after: str | None = None
    while True:
        page = store.list_refs(after=after)
        if isinstance(page, Failure):
            return Failure(store_failure(page.failure()))
        entries = page.unwrap()
        if not entries:
            return Success(out)
        out.extend(e.ref for e in entries if e.ref not in marked and e.stored_at < cutoff)
        after = entries[-1].ref


__all__ = [
    "Collection",
    "LifecycleChange",
    "PruneReport",
    "PruneRequest",
    "SessionLifecycle",
    "delete_sessions",
    "prune",
    "set_archived",
]
