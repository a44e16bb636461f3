"""Reading a session from its files: the manifest bytes past the cached entry, validated
with the segments they attest and folded into it (strict), or the longest valid prefix
(salvage). Nothing here writes; the append protocol lives in `session_store`.

Nothing inside a session is followed or waited on: the session and events directories
are checked with `lstat`, files are opened with `O_NOFOLLOW` and must be regular files
(see `workrail.store.fsio`); anything else makes the session `corrupt_*` with a reason.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from workrail.core.events import DomainEvent
from workrail.core.health import Corruption, Location
from workrail.core.log_reader import (
    CorruptionError,
    missing_pins,
    parse_manifest_suffix,
    parse_segment,
    pins_of,
)
from workrail.core.manifest import ManifestRecord, SegmentClosed, segment_rel_path
from workrail.store.fsio import UnsafePath, kind_of, open_regular, read_regular
from workrail.store.gc_pause import collector_paused
from workrail.store.local.session_cache import SessionCache
from workrail.store.log_state import LogState, fold

MANIFEST = "manifest.jsonl"
STAGED_MANIFEST = "manifest.jsonl.tmp"
"""The manifest of a session being created, published by one link(2) when complete."""
LARGE_LOAD_BYTES = 64 * 1024
"""Manifest bytes (about 150 appends) from which a load pauses the garbage collector."""
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def mtime_of(st: os.stat_result) -> datetime:
    """A file's mtime to the microsecond, exactly (a float of seconds loses the last
    digit), so a last activity carried to PostgreSQL and back stays the same instant."""
    return EPOCH + timedelta(microseconds=st.st_mtime_ns // 1000)


def mtime_ns(moment: datetime) -> int:
    """The inverse of `mtime_of`: the nanoseconds to set as a file's mtime."""
    return (moment - EPOCH) // timedelta(microseconds=1) * 1000


@dataclass
class Entry(LogState):
    """Cached validated state of one session (the log state every store keeps), plus the
    manifest identity it was read from."""

    ino: int = -1
    dev: int = -1
    size: int = 0
    mtime_ns: int = 0
    consumed: int = 0  # manifest bytes that hold accepted records
    torn: bool = False  # bytes after `consumed` exist: an unacknowledged, interrupted append

    @property
    def event_count(self) -> int:
        return len(self.events)

    def identify(self, st: os.stat_result) -> None:
        """Record the manifest file this state now stands for."""
        self.ino, self.dev, self.size, self.mtime_ns = (
            st.st_ino,
            st.st_dev,
            st.st_size,
            st.st_mtime_ns,
        )


def load(cache: SessionCache[Entry], session_id: str, session_dir: Path) -> Entry | Corruption:
    """Bring the cached entry up to date with disk, reading only what is new: one lstat
    when the manifest is unchanged (call holding the session's state lock)."""
    manifest_path = session_dir / MANIFEST
    try:
        st = os.lstat(manifest_path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        cache.forget(session_id)
        return Corruption("missing_attested_segment", f"I/O error: {exc}", "head")
    entry = cache.get(session_id)
    if entry is not None and st is not None and (st.st_ino, st.st_dev) == (entry.ino, entry.dev):
        if st.st_size == entry.size and st.st_mtime_ns == entry.mtime_ns:
            return entry
        if st.st_size < entry.consumed:
            entry = None
    else:
        entry = None
    try:
        if not check_session_dir(session_dir) or st is None:
            cache.forget(session_id)
            return Entry()
    except UnsafePath as exc:
        cache.forget(session_id)
        return unsafe(exc, "head")
    try:
        fd = open_regular(manifest_path)
    except UnsafePath as exc:
        cache.forget(session_id)
        return unsafe(exc, "head")
    except FileNotFoundError:
        cache.forget(session_id)
        return Entry()
    except OSError as exc:
        cache.forget(session_id)
        return Corruption("missing_attested_segment", f"I/O error: {exc}", "head")
    loaded = _read_on(fd, Entry() if entry is None else entry, session_dir)
    if isinstance(loaded, Corruption):
        cache.forget(session_id)
        return loaded
    cache.remember(session_id, loaded)
    return loaded


def _read_on(fd: int, entry: Entry, session_dir: Path) -> Entry | Corruption:
    """Fold the manifest bytes past `entry.consumed` (from the open manifest `fd`)."""
    try:
        with os.fdopen(fd, "rb") as f:
            f.seek(entry.consumed)
            data = f.read()
            fst = os.fstat(f.fileno())
        with collector_paused(len(data) >= LARGE_LOAD_BYTES):
            extend(entry, session_dir, data, salvage=False)
    except CorruptionError as exc:
        return exc.corruption
    except OSError as exc:
        return Corruption("missing_attested_segment", f"I/O error: {exc}", "tail")
    entry.identify(fst)
    return entry


def extend(entry: Entry, session_dir: Path, data: bytes, *, salvage: bool) -> Corruption | None:
    """Validate manifest bytes that follow `entry.consumed` and fold them into `entry`.

    Strict: raises `CorruptionError`, `entry` maybe partly extended for the caller to
    discard. Salvage: stops at the first bad record, keeps the prefix, returns why.
    """
    try:
        tail = parse_manifest_suffix(data, len(entry.manifest))
    except CorruptionError as exc:
        if salvage:
            return exc.corruption
        raise
    records, ends = tail.records, tail.line_ends
    segments: dict[int, list[DomainEvent]] = {}
    if not salvage:  # a salvage load stops at the first bad record anyway
        records, ends = _drop_unacknowledged_group(entry, session_dir, records, ends, segments)
    entry.torn = tail.torn or len(records) < len(tail.records)
    before = len(entry.manifest)

    def events_of(position: int, record: SegmentClosed) -> list[DomainEvent]:
        events = segments.get(position)
        return read_segment(session_dir, record) if events is None else events

    stopped = fold(entry, records, events_of, salvage=salvage)
    accepted = len(entry.manifest) - before
    if accepted:
        entry.consumed += ends[accepted - 1]
    return stopped


def _drop_unacknowledged_group(
    entry: Entry,
    session_dir: Path,
    records: list[ManifestRecord],
    ends: list[int],
    segments: dict[int, list[DomainEvent]],
) -> tuple[list[ManifestRecord], list[int]]:
    """Leave out the file's final group when it is an append that was interrupted.

    We write a `segment_closed` and all its pins with one write, so a final group whose
    nodes are not all pinned was cut short before its fsync and never acknowledged (the
    reference writes the pins separately; a crash between the two leaves the same
    shape, equally unacknowledged). Only the final group can be in that state; its
    segment was made durable before the record was written, so it must read and verify
    — if it does not, that is corruption and it propagates.
    """
    last = max((i for i, r in enumerate(records) if isinstance(r, SegmentClosed)), default=None)
    if last is None:
        return records, ends
    record = records[last]
    assert isinstance(record, SegmentClosed)
    events = read_segment(session_dir, record)
    segments[last] = events
    if missing_pins(events, entry.pins | pins_of(records)):
        return records[:last], ends[:last]
    return records, ends


def is_session(session_dir: Path) -> bool:
    """Whether anything was ever committed here: the manifest (of any type) exists."""
    return os.path.lexists(session_dir / MANIFEST)


def check_session_dir(session_dir: Path) -> bool:
    """False when absent; `UnsafePath` when it is not a real directory."""
    try:
        st = os.lstat(session_dir)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(session_dir, kind_of(st.st_mode))
    return True


def unsafe(exc: UnsafePath, location: Location) -> Corruption:
    """A link or special file where a session keeps plain files: damage, never followed."""
    return Corruption(
        "missing_attested_segment",
        f"{exc.path} is {exc.what}; WorkRail reads only plain files and directories inside "
        "the data directory, and never follows links there",
        location,
    )


def read_segment(session_dir: Path, record: SegmentClosed) -> list[DomainEvent]:
    expected = segment_rel_path(record.firstEventIndex, record.lastEventIndex)
    if record.segmentRelPath != expected:
        raise CorruptionError(
            Corruption(
                "schema_validation_failed",
                f"segmentRelPath {record.segmentRelPath!r} does not name events "
                f"{record.firstEventIndex}..{record.lastEventIndex} ({expected})",
                "tail",
            )
        )
    path = session_dir / expected
    try:
        check_session_dir(path.parent)
        data = read_regular(path)
    except UnsafePath as exc:
        raise CorruptionError(unsafe(exc, "tail")) from exc
    except FileNotFoundError as exc:
        raise CorruptionError(
            Corruption(
                "missing_attested_segment",
                f"Missing attested segment: {record.segmentRelPath}",
                "tail",
            )
        ) from exc
    return parse_segment(data, record)
