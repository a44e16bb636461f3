"""Copying one store into another (`workrail migrate`): every snapshot, pinned workflow
and session, and the token keyring, verified as it goes and never deleting anything.

Each session travels as its own bundle: exported from the source, validated, imported
under the same id with one append per original segment (so the target's manifest is the
source's), then exported from the target and compared byte for byte. What the target
already holds identically is skipped; a session id that holds something else there is
refused, never overwritten. Content objects are verified by their hash on both sides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from returns.result import Failure, Result, Success

from workrail import __version__
from workrail.bundle.export import bundle_bytes, export_session
from workrail.bundle.import_ import import_validated
from workrail.bundle.models import Bundle
from workrail.bundle.validate import check_bundle
from workrail.store.errors import StoreError
from workrail.store.ports import Backend, PinnedWorkflowStore, SnapshotStore, StoredRef

Outcome = Literal["moved", "skipped", "refused", "failed"]
FIXED_BUNDLE_ID = "bundle_migratemigratemigratemigr"
FIXED_EXPORTED_AT = "2000-01-01T00:00:00.000Z"


@dataclass
class Tally:
    moved: int = 0
    skipped: int = 0
    refused: int = 0
    failed: int = 0
    problems: list[dict[str, str]] = field(default_factory=list)

    def count(self, outcome: Outcome, item: str, why: str = "") -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)
        if outcome in ("refused", "failed"):
            self.problems.append({"id": item, "outcome": outcome, "reason": why})

    def to_json(self) -> dict[str, Any]:
        return {
            "moved": self.moved,
            "skipped": self.skipped,
            "refused": self.refused,
            "failed": self.failed,
            "problems": self.problems,
        }


Say = Callable[[str], object]
"""Where progress lines go (a person's terminal, or nowhere)."""


def migrate_stores(source: Backend, target: Backend, say: Say) -> tuple[str, dict[str, Tally]]:
    """Copy `source` into `target`: what happened to the keyring, and a tally for the
    snapshots, the pinned workflows and the sessions (in that order: a session's content
    is there before the session)."""
    keys = carry_keyring(source, target)
    say(f"keyring: {keys}")
    tallies: dict[str, Tally] = {}
    for name, src, dst in (
        ("snapshots", source.snapshots, target.snapshots),
        ("pinnedWorkflows", source.pinned, target.pinned),
    ):
        tallies[name] = copy_content(src, dst, say, name)
    tallies["sessions"] = copy_sessions(source, target, say)
    return keys, tallies


def carry_keyring(source: Backend, target: Backend) -> str:
    """Carry the source's token keys, so tokens agents hold keep working on the target."""
    keys = source.keyring.load()
    if isinstance(keys, Failure):
        return f"not moved ({keys.failure().message})"
    adopted = target.keyring.adopt(keys.unwrap())
    if isinstance(adopted, Failure):
        return f"not moved ({adopted.failure().message})"
    if adopted.unwrap() == keys.unwrap():
        return "the target signs with the source's keys"
    return (
        "the target already had its own keys: tokens issued by the source do not verify "
        "there (agents rehydrate from tokens the target issues)"
    )


def _pages(
    fetch: Callable[[str | None], Result[list[str], StoreError]],
) -> Iterator[str | StoreError]:
    after: str | None = None
    while True:
        page = fetch(after)
        if isinstance(page, Failure):
            yield page.failure()
            return
        items = page.unwrap()
        if not items:
            return
        yield from items
        after = items[-1]


def _refs_of(page: list[StoredRef]) -> list[str]:
    return [entry.ref for entry in page]


def copy_content(
    src: SnapshotStore | PinnedWorkflowStore,
    dst: SnapshotStore | PinnedWorkflowStore,
    say: Say,
    name: str,
) -> Tally:
    tally = Tally()
    for ref in _pages(lambda after: src.list_refs(after=after).map(_refs_of)):
        if isinstance(ref, StoreError):
            tally.count("failed", name, f"cannot list the source: {ref.message}")
            break
        got = src.get(ref)
        value = got.value_or(None)
        if value is None:
            why = got.failure().message if isinstance(got, Failure) else "vanished"
            tally.count("failed", ref, f"unreadable in the source: {why}")
            continue
        if dst.get(ref).value_or(None) == value:  # a damaged copy is rewritten
            tally.count("skipped", ref)
            continue
        put = dst.put(value)
        if isinstance(put, Failure) or put.unwrap() != ref or dst.get(ref).value_or(None) != value:
            why = put.failure().message if isinstance(put, Failure) else "does not read back"
            tally.count("failed", ref, why)
            continue
        tally.count("moved", ref)
    if tally.moved:
        say(f"{name}: moved {tally.moved}")
    return tally


def _bundle(backend: Backend, session_id: str) -> Result[Bundle, str]:
    """The session as a bundle with fixed metadata, so two stores' bundles compare."""
    exported = export_session(
        backend,
        session_id,
        bundle_id=FIXED_BUNDLE_ID,
        exported_at=FIXED_EXPORTED_AT,
        app_version=__version__,
    )
    return exported.alt(lambda e: e.message)


def _export(backend: Backend, session_id: str) -> Result[bytes, str]:
    return _bundle(backend, session_id).map(bundle_bytes)


def copy_sessions(source: Backend, target: Backend, say: Say) -> Tally:
    tally = Tally()
    for sid in _pages(lambda after: source.sessions.list_ids(after=after)):
        if isinstance(sid, StoreError):
            tally.count("failed", "sessions", f"cannot list the source: {sid.message}")
            break
        outcome, why = _session(source, target, sid)
        tally.count(outcome, sid, why)
        say(f"{outcome:>8} {sid}" + (f": {why}" if why else ""))
    return tally


def _session(source: Backend, target: Backend, sid: str) -> tuple[Outcome, str]:
    health = source.sessions.health(sid)
    if isinstance(health, Failure):
        return "failed", health.failure().message
    if not health.unwrap().is_healthy:
        reason = health.unwrap().reason
        return "refused", (
            f"damaged in the source ({health.unwrap().kind}"
            + (f": {reason.code}" if reason else "")
            + "); export its salvage with `workrail export` and import it instead"
        )
    exported = _bundle(source, sid)
    if isinstance(exported, Failure):
        empty = source.sessions.read(sid, lambda log: log.is_empty)
        if empty.value_or(False):
            return "skipped", "empty in the source (nothing to move)"
        return "failed", exported.failure()
    bundle = exported.unwrap()
    data = bundle_bytes(bundle)
    exists = target.sessions.exists(sid)
    if isinstance(exists, Failure):
        return "failed", exists.failure().message
    if exists.unwrap():
        there = _export(target, sid)
        if isinstance(there, Failure) or there.unwrap() != data:
            return "refused", "the target holds different content under this id; left alone"
        kept = _activity(source, target, sid)
        return ("failed", kept) if kept else ("skipped", "")
    validated = check_bundle(bundle)
    if isinstance(validated, Failure):
        return "failed", validated.failure().message
    imported = import_validated(target, validated.unwrap(), mint_session_id=lambda: "")
    if isinstance(imported, Failure):
        problem = imported.failure()
        contended = (problem.details or {}).get("storeCode") == "SESSION_LOCKED"
        if _written_meanwhile(target, sid, data, wait=contended):
            return "skipped", "another migration wrote it meanwhile"
        return "failed", imported.failure().message
    moved = _export(target, sid)
    if isinstance(moved, Failure) or moved.unwrap() != data:
        return "failed", "written, but it does not read back identical; do not use it there"
    carried = _lifecycle(source, target, sid) or _activity(source, target, sid)
    if carried:
        return "failed", carried
    return "moved", ""


def _activity(source: Backend, target: Backend, sid: str) -> str:
    """Carry when the session was last active (the source store's stamp of its last
    append: the log records no clock), so the target lists it in the same order and
    `sessions prune --older-than` means the same there; why not, or ''."""
    moment = source.sessions.last_activity(sid)
    if isinstance(moment, Failure):
        return f"moved, but its last activity could not be read: {moment.failure().message}"
    when = moment.unwrap()
    if when is None or target.sessions.last_activity(sid).value_or(None) == when:
        return ""
    put = target.lifecycle.restamp(sid, when)
    deadline = time.monotonic() + WRITTEN_MEANWHILE_WAIT
    while isinstance(put, Failure) and put.failure().code == "SESSION_LOCKED":
        # another migration of the same session (two runs at once) holds it: wait for it
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
        put = target.lifecycle.restamp(sid, when)
    if isinstance(put, Failure):
        return f"moved, but its last activity was not: {put.failure().message}"
    return ""


WRITTEN_MEANWHILE_WAIT: Final = 30.0
"""How long a session another migration is writing right now may take to appear."""


def _written_meanwhile(target: Backend, sid: str, data: bytes, *, wait: bool) -> bool:
    """After an import that failed: whether another run (two `migrate`s at once) wrote this
    very session since it was found missing. With `wait` (the import found the session
    locked: that run is writing it now) its write is waited for; it is visible, whole,
    once committed."""
    deadline = time.monotonic() + (WRITTEN_MEANWHILE_WAIT if wait else 0.0)
    while True:
        there = target.sessions.exists(sid)
        if isinstance(there, Success) and there.unwrap():
            exported = _export(target, sid)
            return isinstance(exported, Success) and exported.unwrap() == data
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _lifecycle(source: Backend, target: Backend, sid: str) -> str:
    """Carry the session's archive state and workspace (outside its log); why not, or ''."""
    record = source.lifecycle.get(sid)
    if isinstance(record, Failure):
        return f"moved, but its archive state could not be read: {record.failure().message}"
    if record.unwrap().is_default:
        return ""
    put = target.lifecycle.put(sid, record.unwrap())
    if isinstance(put, Failure):
        return f"moved, but its archive state was not: {put.failure().message}"
    return ""
