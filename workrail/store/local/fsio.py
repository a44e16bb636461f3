"""Small durable-file helpers: atomic write (tmp + fsync + rename + dir fsync), fsync'd append.

Every regular file the store creates has mode 0600, as the reference does.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a short write is legal for regular files)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically and durably: `path.tmp`, fsync, rename, fsync dir."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def durable_append(path: Path, data: bytes) -> None:
    """Append `data` in one write and fsync it; creates the file (0600) when missing."""
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)
