"""Watching a data directory for appends: cheap polling of manifest identities.

An append always ends by growing `manifest.jsonl` (size and mtime change; a replaced or
recreated one changes inode), so comparing one `stat` per watched session finds every
change made by any process — ours, another server's, or the reference's — without
reading a byte of the logs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Collection

from returns.result import Result, Success

from workrail.store.errors import StoreError
from workrail.store.local.layout import Layout, UnsafeReference

POLL_SECONDS = 0.2

Identity = tuple[int, int, int]


class LocalWatch:
    def __init__(self, layout: Layout, poll_seconds: float = POLL_SECONDS) -> None:
        self._layout = layout
        self._poll = poll_seconds

    def subscribe(
        self, session_ids: Collection[str] | None = None
    ) -> Result[_PollingFeed, StoreError]:
        return Success(_PollingFeed(self._layout, session_ids, self._poll))


class _PollingFeed:
    def __init__(self, layout: Layout, ids: Collection[str] | None, poll: float) -> None:
        self._layout = layout
        self._ids = None if ids is None else frozenset(ids)
        self._poll = poll
        self._closed = threading.Event()
        self._seen = self._scan()

    def _names(self) -> Collection[str]:
        if self._ids is not None:
            return self._ids
        try:
            return os.listdir(self._layout.sessions_dir)
        except OSError:
            return ()

    def _scan(self) -> dict[str, Identity]:
        found: dict[str, Identity] = {}
        for name in self._names():
            try:
                manifest = self._layout.session_dir(name) / "manifest.jsonl"
                st = os.stat(manifest)
            except (UnsafeReference, OSError):
                continue
            found[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
        return found

    def wait(self, timeout: float) -> Result[frozenset[str], StoreError]:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            now = self._scan()
            changed = {k for k, v in now.items() if self._seen.get(k) != v}
            changed |= self._seen.keys() - now.keys()
            if changed:
                self._seen = now
                return Success(frozenset(changed))
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed.is_set():
                return Success(frozenset())
            self._closed.wait(min(self._poll, remaining))

    def close(self) -> None:
        self._closed.set()
