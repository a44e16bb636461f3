"""Renaming a bundle's session (import-as-new on an id collision, spec 60-bundles §5). Pure.

The session id appears in every event, every manifest record and inside dedupe keys (as
one `:`-separated field). Segment digests and integrity entries cover those bytes, so they
are recomputed: the renamed bundle is itself a valid bundle, and renaming it back gives the
original bytes. eventIds, runIds and nodeIds are opaque and stay unchanged.
"""

from __future__ import annotations

from typing import Any

from workrail.bundle.integrity import compute_entries
from workrail.bundle.models import Bundle
from workrail.core.canonical import jsonl_line, sha256_digest
from workrail.core.ids import is_session_id


def rename_dedupe_key(key: str, old_id: str, new_id: str) -> str:
    """Replace the session id where it is a whole field of the key, nowhere else."""
    return ":".join(new_id if part == old_id else part for part in key.split(":"))


def rename_session(bundle: Bundle, new_id: str) -> Bundle:
    """The same bundle with its session called `new_id` (digests and integrity recomputed)."""
    if not is_session_id(new_id):
        raise ValueError(f"not a session id: {new_id[:60]!r}")
    old_id = bundle.session.sessionId
    doc = bundle.to_json()
    session: dict[str, Any] = doc["session"]
    session["sessionId"] = new_id
    events: list[dict[str, Any]] = session["events"]
    for event in events:
        event["sessionId"] = new_id
        event["dedupeKey"] = rename_dedupe_key(event["dedupeKey"], old_id, new_id)
    for record in session["manifest"]:
        record["sessionId"] = new_id
        if record["kind"] == "segment_closed":
            first, last = record["firstEventIndex"], record["lastEventIndex"]
            data = b"".join(jsonl_line(e) for e in events[first : last + 1])
            record["sha256"] = sha256_digest(data)
            record["bytes"] = len(data)
    doc["integrity"]["entries"] = [e.to_json() for e in compute_entries(session)]
    return Bundle.model_validate(doc)
