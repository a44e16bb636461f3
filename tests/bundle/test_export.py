from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from returns.result import Failure

from tests.bundle.helpers import BLOCKED, EXPORTED_AT, PROBE, SESSIONS, export, export_doc
from workrail.bundle.export import bundle_bytes, export_session, pinned_prefix, utc_now
from workrail.bundle.models import Bundle
from workrail.bundle.validate import validate_bytes
from workrail.core.canonical import canonical_bytes, canonical_digest, sha256_digest
from workrail.core.events import NodeCreated, RunStarted
from workrail.store.local.backend import LocalBackend


def _manifest_lines(data: Path, sid: str) -> list[dict[str, object]]:
    text = (data / "sessions" / sid / "manifest.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_envelope_of_reference_sessions(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    for sid in SESSIONS:
        doc = export_doc(backend, sid)
        assert set(doc) == {
            "bundleSchemaVersion",
            "bundleId",
            "exportedAt",
            "producer",
            "integrity",
            "session",
        }
        assert doc["bundleSchemaVersion"] == 1
        assert doc["exportedAt"] == EXPORTED_AT
        assert doc["producer"] == {"appVersion": "0.1.0"}
        session = doc["session"]
        assert session["sessionId"] == sid
        assert [e["eventIndex"] for e in session["events"]] == list(range(len(session["events"])))
        assert [r["manifestIndex"] for r in session["manifest"]] == list(
            range(len(session["manifest"]))
        )
        # the manifest is exported as-is: equal to the file the reference wrote
        assert session["manifest"] == _manifest_lines(reference_data, sid)


def test_integrity_entries_order_and_digests(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    bundle = export(backend, PROBE)
    session = bundle.session
    first_refs: list[str] = []
    first_wfs: list[str] = []
    for e in session.events:
        if isinstance(e, NodeCreated) and e.data.snapshotRef not in first_refs:
            first_refs.append(e.data.snapshotRef)
        if isinstance(e, NodeCreated | RunStarted) and e.data.workflowHash not in first_wfs:
            first_wfs.append(e.data.workflowHash)
    paths = [entry.path for entry in bundle.integrity.entries]
    assert paths == [
        "session/events",
        "session/manifest",
        *(f"session/snapshots/{r}" for r in first_refs),
        *(f"session/pinnedWorkflows/{w}" for w in first_wfs),
    ]
    assert bundle.integrity.kind == "sha256_manifest_v1"
    sj = bundle.session_json()
    for entry in bundle.integrity.entries:
        section, _, key = entry.path.removeprefix("session/").partition("/")
        value = sj[section][key] if key else sj[section]
        data = canonical_bytes(value)
        assert entry.sha256 == sha256_digest(data)
        assert entry.bytes == len(data)
        if key:  # snapshots and pinned workflows hash to their own key
            assert entry.sha256 == key
    # the CAS files are exactly the bundled values
    for ref, snap in session.snapshots.items():
        assert canonical_digest(snap) == ref
        file = reference_data / "snapshots" / (ref.replace(":", "_") + ".json")
        assert file.read_bytes() == canonical_bytes(snap)
    # the golden snapshot refs of the spec are present
    assert "sha256:4748bddf79af5c179e3c59cbcb86d35ab387c10362eff5b085dd62039384027e" in paths[2]
    assert set(session.pinnedWorkflows) == {
        "sha256:5355dac5bead5f869d68b02723ceaef551e0acd397d6973e14fc7959d7110c09"
    }


def test_bundle_bytes_are_canonical_and_deterministic(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    a = bundle_bytes(export(backend, BLOCKED))
    b = bundle_bytes(export(LocalBackend.open(reference_data), BLOCKED))
    assert a == b
    assert canonical_bytes(json.loads(a)) == a
    assert isinstance(validate_bytes(a).unwrap().bundle, Bundle)


def test_export_never_includes_tokens_or_keyring(reference_data: Path) -> None:
    """Every token the reference handed out for these sessions, and the signing key, are
    absent from their bundles: tokens are not portable and are re-minted on import."""
    transcripts = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "transcripts"
    tokens: set[str] = set()
    for file in transcripts.iterdir():
        tokens |= set(re.findall(r"(?:st1|ack1|chk1)[a-z0-9]{20,}", file.read_text()))
    assert len(tokens) > 10
    keyring = json.loads((reference_data / "keys" / "keyring.json").read_text())
    secret = keyring["current"]["keyBase64Url"]
    for sid in SESSIONS:
        text = bundle_bytes(export(LocalBackend.open(reference_data), sid)).decode()
        assert secret not in text
        assert not [t for t in tokens if t in text]


def _last_segment(data: Path, sid: str) -> Path:
    return max((data / "sessions" / sid / "events").iterdir())


def test_salvage_export_of_corrupt_tail(reference_data: Path) -> None:
    healthy = export(LocalBackend.open(reference_data), PROBE)
    segment = _last_segment(reference_data, PROBE)
    raw = bytearray(segment.read_bytes())
    raw[10] ^= 0x01
    segment.write_bytes(bytes(raw))
    backend = LocalBackend.open(reference_data)
    assert backend.sessions.health(PROBE).unwrap().kind == "corrupt_tail"
    bundle = export(backend, PROBE)
    assert bundle.salvage is not None
    assert bundle.salvage.complete is False
    assert bundle.salvage.reason.code == "digest_mismatch"
    first_bad = int(segment.name.split("-")[0])
    assert len(bundle.session.events) == first_bad
    # only the valid prefix, byte for byte what the healthy export held
    assert [e.to_json() for e in bundle.session.events] == [
        e.to_json() for e in healthy.session.events[:first_bad]
    ]
    last_record = bundle.session.manifest[-1]
    assert all(
        r.to_json() in [h.to_json() for h in healthy.session.manifest]
        for r in bundle.session.manifest
    )
    assert last_record.manifestIndex == len(bundle.session.manifest) - 1
    doc = json.loads(bundle_bytes(bundle))
    assert doc["salvage"]["complete"] is False
    assert doc["salvage"]["reason"]["code"] == "digest_mismatch"
    # a salvage bundle is itself a valid bundle
    assert validate_bytes(bundle_bytes(bundle)).unwrap().bundle.salvage is not None


def test_an_interrupted_final_append_is_not_exported(reference_data: Path) -> None:
    manifest = reference_data / "sessions" / PROBE / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["kind"] == "snapshot_pinned"
    manifest.write_bytes(b"".join(lines[:-1]))  # segment_closed written, its pin never was
    backend = LocalBackend.open(reference_data)
    # never acknowledged, so absent: the session is healthy without it
    assert backend.sessions.health(PROBE).unwrap().kind == "healthy"
    bundle = export(backend, PROBE)
    assert bundle.salvage is None
    last_segment_first = json.loads(lines[-2])["firstEventIndex"]
    assert len(bundle.session.events) == last_segment_first
    assert validate_bytes(bundle_bytes(bundle)).unwrap()


def test_pinned_prefix_keeps_whole_pinned_appends(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    events, manifest = backend.sessions.read(
        PROBE, lambda log: (tuple(log.events), tuple(log.manifest))
    ).unwrap()
    assert pinned_prefix(events, manifest) == (events, manifest)
    assert pinned_prefix(events, manifest[:-1])[0] == events[: manifest[-2].firstEventIndex]  # type: ignore[union-attr]


def test_corrupt_head_and_empty_sessions_are_refused(reference_data: Path) -> None:
    manifest = reference_data / "sessions" / BLOCKED / "manifest.jsonl"
    manifest.write_bytes(b"{not json\n" + manifest.read_bytes())
    empty = "sess_aaaaaaaaaaaaaaaaaaaaaaaaaa"
    (reference_data / "sessions" / empty).mkdir()
    backend = LocalBackend.open(reference_data)
    head = export_session(backend, BLOCKED, bundle_id="b", exported_at=EXPORTED_AT, app_version="0")
    assert isinstance(head, Failure)
    assert head.failure().code == "EXPORT_SESSION_STORE_ERROR"
    assert head.failure().details["health"]["kind"] == "corrupt_head"
    for sid in (empty, "sess_bbbbbbbbbbbbbbbbbbbbbbbbba"):
        none = export_session(backend, sid, bundle_id="b", exported_at=EXPORTED_AT, app_version="0")
        assert isinstance(none, Failure)
        assert none.failure().code == "EXPORT_BUILD_FAILED"
        assert none.failure().details == {"reason": "BUNDLE_BUILD_EMPTY_EVENTS"}
    bad = export_session(backend, "../etc", bundle_id="b", exported_at=EXPORTED_AT, app_version="0")
    assert isinstance(bad, Failure)
    assert bad.failure().code == "EXPORT_SESSION_STORE_ERROR"


def _export_failure(data: Path) -> str:
    """The code the export of the probe session fails with."""
    result = export_session(
        LocalBackend.open(data), PROBE, bundle_id="b", exported_at=EXPORTED_AT, app_version="0"
    )
    assert isinstance(result, Failure)
    code: str = result.failure().code
    return code


def test_missing_cas_content_fails_the_export(reference_data: Path) -> None:
    shutil.rmtree(reference_data / "workflows")
    assert _export_failure(reference_data) == "EXPORT_MISSING_PINNED_WORKFLOW"
    for snap in (reference_data / "snapshots").iterdir():
        snap.unlink()
    assert _export_failure(reference_data) == "EXPORT_MISSING_SNAPSHOT"


def test_utc_now_is_a_valid_exported_at() -> None:
    stamp = utc_now()
    assert Bundle.model_validate({**export_doc_stub(), "exportedAt": stamp}).exportedAt == stamp


def export_doc_stub() -> dict[str, object]:
    """An envelope that passes the schema (the session content is not checked here)."""
    return {
        "bundleSchemaVersion": 1,
        "bundleId": "b",
        "exportedAt": EXPORTED_AT,
        "producer": {"appVersion": "0"},
        "integrity": {
            "kind": "sha256_manifest_v1",
            "entries": [{"path": "session/events", "sha256": "sha256:" + "0" * 64, "bytes": 0}],
        },
        "session": {
            "sessionId": PROBE,
            "events": [],
            "manifest": [],
            "snapshots": {},
            "pinnedWorkflows": {},
        },
    }
