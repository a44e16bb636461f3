"""Small durable-file helpers: atomic publication (unique temp file + fsync + rename +
directory fsync), directory creation that is itself durable, and synced writes.

Every regular file the store creates has mode 0600, as the reference does.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FILE_MODE = 0o600


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> None:
    """`mkdir -p` whose new entries survive a power loss: each directory created here is
    made durable by fsyncing its parent."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            continue
        fsync_dir(directory.parent)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a short write is legal for regular files)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_synced(path: Path, data: bytes) -> None:
    """Create or truncate `path` (0600), write `data`, fsync, close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _synced_temp(path: Path, data: bytes) -> Path:
    """A fully written, fsync'd temp file beside `path` with a name no other writer uses,
    so concurrent writers of the same path never truncate each other's bytes."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    os.close(fd)
    return Path(name)


def atomic_write(path: Path, data: bytes) -> None:
    """Publish `data` at `path` atomically and durably (last writer wins)."""
    ensure_dir(path.parent)
    tmp = _synced_temp(path, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def create_exclusive(path: Path, data: bytes) -> bool:
    """Publish `data` at `path` only if nothing is there yet (first writer wins), durably.

    Returns False, writing nothing, when `path` already exists.
    """
    ensure_dir(path.parent)
    tmp = _synced_temp(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
    return True
