"""The files backend's record of snapshot states: a disposable SQLite table in
`<data>/index/snapshot-states.sqlite3`, snapshot ref → (engine state, pending step).

A snapshot's state is a fact of its immutable content, so a row never goes stale. Rows
are written when a snapshot is stored (by whichever process stores it) and when the
state of a snapshot stored without one (by another version, or by the reference) is read
from the snapshot itself. Losing the table costs reading snapshots again, never data: a
table of another schema, or one SQLite cannot read, is thrown away and made afresh, and
after a reboot it is checked once (it is written without fsync). It runs in
rollback-journal mode, so looking states up creates and changes no file. Every failure
here is logged and answered as "not recorded": the snapshots are the truth.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from workrail.core.snapshot_state import STATE_KINDS, SnapshotState
from workrail.store.fsio import UnsafePath, ensure_tree
from workrail.store.local.sqlite_file import (
    boot_id,
    checked_since_boot,
    connect_index,
    discard_index,
)

log = logging.getLogger("workrail.store.snapshot_states")

STATES_SCHEMA: Final = 1
STATES_RELPATH: Final = Path("index") / "snapshot-states.sqlite3"
LOOKUP_CHUNK: Final = 500
"""Refs per query (SQLite limits the parameters of one statement)."""

_SCHEMA: Final = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE states (
    ref TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    pending_step TEXT
) WITHOUT ROWID;
"""


class SnapshotStateIndex:
    def __init__(self, root: Path) -> None:
        self._root = root
        self._path = root / STATES_RELPATH
        self._conn: sqlite3.Connection | None = None
        self._mutex = threading.Lock()
        self._warned = False

    def lookup(self, refs: Sequence[str]) -> dict[str, SnapshotState]:
        """The recorded states among `refs` (none when nothing is recorded yet)."""
        with self._mutex:
            try:
                conn = self._connection(create=False)
                if conn is None:
                    return {}
                found: dict[str, SnapshotState] = {}
                for start in range(0, len(refs), LOOKUP_CHUNK):
                    chunk = refs[start : start + LOOKUP_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for ref, kind, step in conn.execute(
                        f"SELECT ref, kind, pending_step FROM states WHERE ref IN ({marks})",
                        chunk,
                    ):
                        if kind in STATE_KINDS and (step is None or isinstance(step, str)):
                            found[ref] = SnapshotState(kind, step)
                return found
            except (sqlite3.Error, OSError, UnsafePath) as exc:
                self._failed(exc)
                return {}

    def record(self, states: Mapping[str, SnapshotState]) -> None:
        if not states:
            return
        with self._mutex:
            try:
                conn = self._connection(create=True)
                assert conn is not None
                with conn:
                    conn.executemany(
                        "INSERT OR REPLACE INTO states (ref, kind, pending_step) VALUES (?, ?, ?)",
                        [(ref, s.kind, s.pending_step) for ref, s in states.items()],
                    )
            except (sqlite3.Error, OSError, UnsafePath) as exc:
                self._failed(exc)

    def forget(self, ref: str) -> None:
        """Drop a deleted snapshot's row (a collector's delete; best effort)."""
        with self._mutex:
            try:
                conn = self._connection(create=False)
                if conn is not None:
                    with conn:
                        conn.execute("DELETE FROM states WHERE ref = ?", (ref,))
            except (sqlite3.Error, OSError, UnsafePath) as exc:
                self._failed(exc)

    def close(self) -> None:
        with self._mutex:
            self._close()

    # --- the connection ------------------------------------------------------------------

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """The open table, opening it first: None when it does not exist (and `create` is
        false); made afresh when it is missing, of another schema, or damaged."""
        if self._conn is not None:
            return self._conn
        exists = ensure_tree(self._root, self._path.parent, create=create) and os.path.lexists(
            self._path
        )
        if not exists and not create:
            return None
        conn = self._connect()
        try:
            usable = exists and self._usable(conn)
        except sqlite3.DatabaseError:
            usable = False
        if not usable:
            if not create:
                conn.close()
                return None  # the next write makes it afresh
            conn.close()
            self._discard()
            conn = self._connect()
            conn.executescript(_SCHEMA)
            with conn:
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("schema", str(STATES_SCHEMA)), ("boot_id", boot_id())],
                )
        self._conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        return connect_index(self._path, timeout=2.0)

    def _usable(self, conn: sqlite3.Connection) -> bool:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema") != str(STATES_SCHEMA):
            return False
        return checked_since_boot(conn, meta.get("boot_id"))

    def _discard(self) -> None:
        discard_index(self._path)

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def _failed(self, exc: Exception) -> None:
        """Log once; a damaged table is thrown away (the next write makes it afresh),
        a busy or unwritable one is simply not used this time."""
        if not self._warned:
            log.warning("snapshot state index unusable (%s); reading snapshots instead", exc)
            self._warned = True
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            self._close()
            with contextlib.suppress(OSError):
                self._discard()
