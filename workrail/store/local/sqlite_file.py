"""Opening the files backend's disposable SQLite indexes (`index/*.sqlite3`) the one way
they are opened: a private (0600) regular file, rollback journal, no fsync (an index is
rebuilt from the logs whenever it is lost or damaged)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from workrail.store.fsio import open_regular


def connect_index(path: Path, *, timeout: float) -> sqlite3.Connection:
    """SQLite would create the file 0644 (and its journal copies that mode): create it
    0600 first, refusing anything but a regular file under that name."""
    os.close(open_regular(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA synchronous=OFF")
    return conn
