"""Files made ahead of need: empty, unnamed (Linux `O_TMPFILE`) files, one ready per
directory, created by a background thread while the agent thinks.

Allocating an inode is the dearest metadata operation of an append on some disks (a
fresh file costs 0.15–0.6 ms on the disk this was measured on, linking an existing inode
~0.01 ms), and an advance needs three new files: `.lock`, the segment's temp file and the
snapshot's. A spare is invisible until it is linked under a name, so nothing on disk
changes while it waits, and a process that dies simply lets the kernel free it.

Where `O_TMPFILE` or `/proc/self/fd` is unavailable, `take` answers None and the caller
creates its file the ordinary way.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

from workrail.store.process_wide import ProcessWide

_O_TMPFILE: Final = getattr(os, "O_TMPFILE", 0)
_MODE: Final = 0o600
_UNSUPPORTED: Final = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL})
MAX_DIRECTORIES: Final = 64
"""Directories with a spare kept ready (each holds one open descriptor)."""


class Spares:
    """One ready spare per recently used directory; see the module docstring."""

    def __init__(self, *, background: bool = True) -> None:
        self._ready: OrderedDict[str, int] = OrderedDict()
        self._mutex = threading.Lock()
        self._unsupported: set[str] = set()
        self._disabled = not os.path.isdir("/proc/self/fd")  # spares are named through it
        self._background = background
        self._wanted: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._pending: set[str] = set()
        self._worker: threading.Thread | None = None
        self._pid = os.getpid()

    @classmethod
    def shared(cls) -> Spares:
        return _SHARED.get()

    def take(self, directory: Path) -> int | None:
        """A descriptor (O_RDWR) of an empty unnamed 0600 file in `directory`, now owned by
        the caller; None when this file system cannot make one. The next spare for the
        directory is made after the next `flush`."""
        key = str(directory)
        self._after_fork()
        with self._mutex:
            fd = self._ready.pop(key, None)
            self._pending.add(key)
        if fd is None:
            fd = self._make(key)
        return fd

    def flush(self) -> None:
        """Make the spares taken since the last flush, off the caller's path. Called when a
        write is done, so making them never competes with that write's own I/O."""
        with self._mutex:
            pending, self._pending = self._pending, set()
        for key in pending:
            self._want(key)

    def _make(self, key: str) -> int | None:
        if not _O_TMPFILE or self._disabled or key in self._unsupported:
            return None
        try:
            return os.open(key, _O_TMPFILE | os.O_RDWR, _MODE)
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                self._unsupported.add(key)  # no O_TMPFILE on this file system: do without
            return None

    def _want(self, key: str) -> None:
        if not self._background:
            self._refill(key)
            return
        if self._worker is None or not self._worker.is_alive():
            with self._mutex:
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(
                        target=self._run, name="workrail-spares", daemon=True
                    )
                    self._worker.start()
        self._wanted.put(key)

    def _run(self) -> None:
        while True:
            self._refill(self._wanted.get())

    def _refill(self, key: str) -> None:
        with self._mutex:
            if key in self._ready:
                return
        fd = self._make(key)
        if fd is None:
            return
        with self._mutex:
            if key in self._ready:
                surplus: int | None = fd
            else:
                surplus = None
                self._ready[key] = fd
                while len(self._ready) > MAX_DIRECTORIES:
                    _, oldest = self._ready.popitem(last=False)
                    os.close(oldest)
        if surplus is not None:
            os.close(surplus)

    def _after_fork(self) -> None:
        """A forked child must not use its parent's spares (shared open file descriptions)
        nor wait for a worker thread that did not survive the fork."""
        if os.getpid() == self._pid:
            return
        with self._mutex:
            for fd in self._ready.values():
                os.close(fd)
            self._ready.clear()
            self._worker = None
            self._wanted = queue.SimpleQueue()
            self._pending = set()
            self._pid = os.getpid()


def link_spare(fd: int, target: Path) -> None:
    """Give the unnamed file `fd` the name `target`. FileExistsError when `target` is
    taken: a link never replaces a file and never follows a symlink planted at `target`."""
    os.link(f"/proc/self/fd/{fd}", target, src_dir_fd=fd, follow_symlinks=True)


_SHARED: ProcessWide[Spares] = ProcessWide(Spares)
