"""The files backend's disposable SQLite indexes (`index/*.sqlite3`), opened the one way
they are opened: a private (0600) regular file, rollback journal, no fsync (an index is
rebuilt from the logs whenever it is lost or damaged), checked once after each boot, and
discarded with its journal files. The journal is kept between writes (PERSIST), zeroed
rather than created and deleted by every commit: a fifth of an advance's time went there."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Final

from workrail.store.fsio import UnsafePath, open_regular


def connect_index(path: Path, *, timeout: float) -> sqlite3.Connection:
    """SQLite would create the file 0644 (and its journal copies that mode): create it
    0600 first, refusing anything but a regular file under that name."""
    os.close(open_regular(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=PERSIST")
    conn.execute("PRAGMA synchronous=OFF")
    return conn


def connect_index_readonly(path: Path, *, timeout: float) -> sqlite3.Connection | None:
    """The index opened read-only, or None when there is none. Anything but a regular file
    under that name (a planted FIFO, which SQLite would wait on forever; a link) counts as
    no index: the caller works from the logs instead."""
    try:
        os.close(open_regular(path, os.O_RDONLY))
    except (UnsafePath, FileNotFoundError, NotADirectoryError):
        return None
    return sqlite3.connect(
        f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False
    )


BOOT_ID: Final = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown"


def checked_since_boot(conn: sqlite3.Connection, recorded: str | None) -> bool:
    """Written without fsync, an index may be damaged after a power loss: the first use
    after a boot (`recorded` is the boot id its meta table holds) runs a quick check and
    records this boot. False: the index is damaged and must be discarded."""
    if recorded == boot_id():
        return True
    row = conn.execute("PRAGMA quick_check").fetchone()
    if row is None or row[0] != "ok":
        return False
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'boot_id'", (boot_id(),))
    return True


def discard_index(path: Path) -> None:
    """The index file and any journal SQLite left beside it."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)
