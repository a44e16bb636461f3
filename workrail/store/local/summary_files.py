"""What a row of the files backend's session index was projected from: the identity
(inode, size, mtime) of a session's manifest, lifecycle record, events directory and
newest segment, read with one `stat` each and compared before a row is trusted.

The *light* identity is the manifest's alone, which every append grows (ours, another
process's, or the reference's): a whole-index sync stats only manifests, and the rest is
checked where rows are shown.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Final

from workrail.core.ids import is_session_id
from workrail.store.local.layout import Layout
from workrail.store.local.lifecycle import LIFECYCLE_FILE

Identity = str
"""`light|lifecycle|events|segment@stat`, each part `-` when its file is missing."""

SEGMENT_RE: Final = re.compile(r"^events/\d{8,}-\d{8,}\.jsonl$")


class IndexUnavailable(Exception):
    """The index cannot answer now (the sessions cannot be listed, the index is damaged
    twice over, a session cannot be projected)."""


def stat_identity(path: str | Path) -> str | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


class SessionFiles:
    """The identities of the sessions under a data directory."""

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._sessions_dir = str(layout.sessions_dir)

    def light(self, session_id: str) -> str | None:
        """One stat: the manifest. None when the session has no manifest. Lifecycle
        records are written only by WorkRail processes, which update the index
        themselves; they and the newest segment are checked where rows are shown."""
        return stat_identity(f"{self._sessions_dir}/{session_id}/manifest.jsonl")

    def identity(self, session_id: str, segment: str | None) -> Identity | None:
        """What a row was projected from: the light identity plus the lifecycle record,
        the events directory and `segment`, the newest one."""
        light = self.light(session_id)
        if light is None:
            return None
        # Plain string joins: pathlib's cost more than the stats themselves.
        session_dir = f"{self._sessions_dir}{os.sep}{session_id}{os.sep}"
        life = stat_identity(session_dir + LIFECYCLE_FILE) or "-"
        # events/ changes whenever a segment is replaced by anything (a FIFO, a directory,
        # a link), so such damage to any segment, not only the newest, is noticed.
        events = stat_identity(session_dir + "events") or "-"
        if segment is None or not SEGMENT_RE.match(segment):
            return f"{light}|{life}|{events}|-"
        seg = stat_identity(session_dir + segment) or "-"
        return f"{light}|{life}|{events}|{segment}@{seg}"

    def fresh(self, session_id: str) -> Identity | None:
        """The identity now, its newest segment read from the manifest's tail."""
        return self.identity(session_id, newest_segment(self._layout.sessions_dir / session_id))

    def again(self, session_id: str, stored: str | None) -> Identity | None:
        """The identity now, taken with the segment `stored` was taken with."""
        return self.identity(session_id, segment_in(stored))

    def scan(self) -> dict[str, Identity]:
        """The light identity of every session now: one listing and one stat each."""
        try:
            names = os.listdir(self._sessions_dir)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise IndexUnavailable(f"cannot list sessions: {exc}") from exc
        found: dict[str, Identity] = {}
        light = self.light
        for name in names:
            if len(name) == 31 and name.startswith("sess_") and is_session_id(name):
                ident = light(name)
                if ident is not None:
                    found[name] = ident
        return found


def lights(rows: dict[str, str]) -> dict[str, str]:
    """The light part of each row's identity."""
    return {sid: ident.split("|", 1)[0] for sid, ident in rows.items()}


def same_log(stored: str, current: str) -> bool:
    """Whether two identities name the same log (manifest, `events/`, newest segment),
    whatever their lifecycle records."""
    a, b = stored.split("|"), current.split("|")
    return len(a) == len(b) == 4 and a[0] == b[0] and a[2:] == b[2:]


def segment_in(identity: str | None) -> str | None:
    """The segment an identity was taken with (its fourth part, before the '@')."""
    parts = (identity or "").split("|")
    if len(parts) != 4 or parts[3] == "-":
        return None
    return parts[3].rsplit("@", 1)[0]


def newest_segment(session_dir: Path) -> str | None:
    """The segment the manifest's last `segment_closed` names, from the file's tail."""
    try:
        with open(session_dir / "manifest.jsonl", "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"segment_closed"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        path = record.get("segmentRelPath") if isinstance(record, dict) else None
        if isinstance(path, str) and SEGMENT_RE.match(path):
            return path
    return None
