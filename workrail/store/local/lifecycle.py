"""Lifecycle records on files: `sessions/<id>/lifecycle.json` beside the log (the
reference's loader reads only `manifest.jsonl` and `events/`, so it ignores the file).
Written atomically while holding the session's writer, so a deletion never races it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol

from returns.result import Failure, Result, Success

from workrail.core.canonical import canonical_bytes
from workrail.core.lifecycle import DEFAULT_LIFECYCLE, SessionLifecycle
from workrail.store.errors import StoreError
from workrail.store.fsio import atomic_write, read_regular
from workrail.store.local.layout import Layout, UnsafeReference
from workrail.store.local.session_load import MANIFEST, mtime_ns
from workrail.store.local.session_store import LocalSessionStore

LIFECYCLE_FILE: Final = "lifecycle.json"


class LifecycleObserver(Protocol):
    def lifecycle_changed(
        self, session_id: str, lifecycle: SessionLifecycle, written_at: datetime
    ) -> None: ...


class LocalLifecycleStore:
    def __init__(self, layout: Layout, sessions: LocalSessionStore) -> None:
        self._layout = layout
        self._sessions = sessions
        self._observer: LifecycleObserver | None = None

    def observe(self, observer: LifecycleObserver) -> None:
        self._observer = observer

    def path(self, session_id: str) -> Path:
        return self._layout.session_dir(session_id) / LIFECYCLE_FILE

    def get(self, session_id: str) -> Result[SessionLifecycle, StoreError]:
        """The default for a session without a record; an unreadable record is the default
        too (it only says archived / workspace, and the next put replaces it)."""
        try:
            path = self.path(session_id)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        try:
            raw = json.loads(read_regular(path))
        except FileNotFoundError:
            return Success(DEFAULT_LIFECYCLE)
        except (OSError, ValueError):
            return Success(DEFAULT_LIFECYCLE)
        return Success(SessionLifecycle.from_json(raw) or DEFAULT_LIFECYCLE)

    def put(self, session_id: str, lifecycle: SessionLifecycle) -> Result[bool, StoreError]:
        data = canonical_bytes(lifecycle.to_json())

        def write(session_dir: Path) -> Result[bool, StoreError]:
            path = session_dir / LIFECYCLE_FILE
            atomic_write(path, data, root=self._layout.root)
            if self._observer is not None:
                st = os.lstat(path)
                self._observer.lifecycle_changed(
                    session_id, lifecycle, datetime.fromtimestamp(st.st_mtime, UTC)
                )
            return Success(True)

        written = self._sessions.exclusive(session_id, write)
        if isinstance(written, Failure):
            return Failure(written.failure())
        return Success(bool(written.unwrap()))

    def restamp(self, session_id: str, moment: datetime) -> Result[bool, StoreError]:
        """The manifest's mtime is the files backend's last activity: set it, under the
        writer. The summary index sees the manifest's new identity and projects again."""
        stamp = mtime_ns(moment)

        def touch(session_dir: Path) -> Result[bool, StoreError]:
            manifest = session_dir / MANIFEST
            st = os.lstat(manifest)
            os.utime(manifest, ns=(st.st_atime_ns, stamp), follow_symlinks=False)
            return Success(True)

        done = self._sessions.exclusive(session_id, touch)
        if isinstance(done, Failure):
            return Failure(done.failure())
        return Success(bool(done.unwrap()))
