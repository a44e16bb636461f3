"""Shared helpers for bundle tests: exporting with fixed metadata, resealing crafted
bundles, comparing session truth and fingerprinting a data directory."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from workrail.bundle.export import bundle_bytes, export_session
from workrail.bundle.integrity import compute_entries
from workrail.bundle.models import Bundle
from workrail.bundle.rename import rename_session
from workrail.core.canonical import canonical_bytes, jsonl_line, sha256_digest
from workrail.store.local.backend import LocalBackend

PROBE = "sess_akuobhxpaal3j6jgnpsnzywq2u"  # probe-flow: checkpoints, fork, completion
BLOCKED = "sess_xitzhouag5y6h6k7bbzrv6k6ly"  # val-flow: blocked attempts, retries, fork
SESSIONS = (PROBE, BLOCKED)
EXPORTED_AT = "2026-01-02T03:04:05.678Z"
BUNDLE_ID = "bundle_fixedfortestsfixedfortest"


def export(backend: LocalBackend, session_id: str) -> Bundle:
    result = export_session(
        backend, session_id, bundle_id=BUNDLE_ID, exported_at=EXPORTED_AT, app_version="0.1.0"
    )
    return result.unwrap()


def export_doc(backend: LocalBackend, session_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(bundle_bytes(export(backend, session_id)))
    return doc


def truth(bundle: Bundle, as_session: str | None = None) -> bytes:
    """The durable truth a bundle carries (session section), optionally renamed first."""
    if as_session is not None and bundle.session.sessionId != as_session:
        bundle = rename_session(bundle, as_session)
    return canonical_bytes(bundle.session_json())


def reseal(doc: dict[str, Any]) -> dict[str, Any]:
    """Recompute segment digests and integrity entries after a deliberate edit, so the
    edit reaches the check behind integrity."""
    session = doc["session"]
    events = session["events"]
    for record in session["manifest"]:
        if record.get("kind") == "segment_closed":
            first, last = record["firstEventIndex"], record["lastEventIndex"]
            if 0 <= first <= last < len(events):
                data = b"".join(jsonl_line(e) for e in events[first : last + 1])
                record["sha256"] = sha256_digest(data)
                record["bytes"] = len(data)
    doc["integrity"]["entries"] = [e.to_json() for e in compute_entries(session)]
    return doc


def edited(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)


def encode(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def tree_fingerprint(root: Path) -> str:
    """Every path (files and directories) and file content under `root`."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(b"F" + path.read_bytes())
        else:
            h.update(b"D")
    return h.hexdigest()


def rekey(doc: dict[str, Any]) -> dict[str, Any]:
    """Re-seal a bundle whose snapshots or pinned workflows were edited: every content key
    becomes its value's digest again, the events and pins that name a key are rewritten,
    pins are re-sorted, then `reseal` — what anyone can do to a bundle by hand."""
    session = doc["session"]
    renamed: dict[str, str] = {}
    for section in ("snapshots", "pinnedWorkflows"):
        table: dict[str, Any] = {}
        for key, value in session[section].items():
            new_key = sha256_digest(canonical_bytes(value))
            renamed[key] = new_key
            table[new_key] = value
        session[section] = table
    for event in session["events"]:
        data = event.get("data")
        if isinstance(data, dict):
            for field in ("snapshotRef", "workflowHash"):
                if isinstance(data.get(field), str) and data[field] in renamed:
                    data[field] = renamed[data[field]]
    groups: list[list[dict[str, Any]]] = []
    for record in session["manifest"]:
        if record.get("kind") == "snapshot_pinned":
            record["snapshotRef"] = renamed.get(record["snapshotRef"], record["snapshotRef"])
            if groups:
                groups[-1].append(record)
        else:
            groups.append([record])
    manifest = []
    for group in groups:
        pins = sorted(
            group[1:], key=lambda p: (p["snapshotRef"], p["eventIndex"], p["createdByEventId"])
        )
        manifest.extend([group[0], *pins])
    for index, record in enumerate(manifest):
        record["manifestIndex"] = index
    session["manifest"] = manifest
    return reseal(doc)
