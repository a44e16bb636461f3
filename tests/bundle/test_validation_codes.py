"""A crafted bad bundle for every BUNDLE_* code, each rejected with the offending path and
without writing anything."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from tests.bundle.helpers import PROBE, edited, encode, export_doc, reseal, tree_fingerprint
from tests.conftest import REFERENCE
from tests.store.plans import fresh_session_id
from workrail.bundle.errors import BUNDLE_CODES
from workrail.bundle.import_ import import_bundle
from workrail.bundle.integrity import compute_entries
from workrail.bundle.validate import MAX_BUNDLE_BYTES, validate_bytes
from workrail.core.canonical import canonical_digest
from workrail.core.ids import make_id
from workrail.core.snapshot import InitState, snapshot_of
from workrail.store.local.backend import LocalBackend

OTHER_SESSION = make_id("sess", b"\x05" * 16)
OTHER_EVENT = make_id("evt", b"\x06" * 16)
OTHER_NODE = make_id("node", b"\x08" * 16)


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    path: str
    craft: Callable[[dict[str, Any]], bytes]


def _doc(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], bytes]:
    """Apply `fn` (its return value is ignored) to a copy of the good document."""

    def craft(good: dict[str, Any]) -> bytes:
        doc = edited(good)
        fn(doc)
        return encode(doc)

    return craft


def _sealed(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], bytes]:
    """Like `_doc`, then recompute digests so the edit reaches the later checks."""
    return _doc(lambda d: (fn(d), reseal(d)))


def _integrity_only(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], bytes]:
    def both(d: dict[str, Any]) -> None:
        fn(d)
        d["integrity"]["entries"] = [e.to_json() for e in compute_entries(d["session"])]

    return _doc(both)


def _events(d: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = d["session"]["events"]
    return events


def _first(d: dict[str, Any], kind: str) -> int:
    return next(i for i, e in enumerate(_events(d)) if e["kind"] == kind)


def _renumber(d: dict[str, Any]) -> dict[str, Any]:
    for i, r in enumerate(d["session"]["manifest"]):
        r["manifestIndex"] = i
    return d


def _first_snapshot(d: dict[str, Any]) -> str:
    ref: str = _events(d)[_first(d, "node_created")]["data"]["snapshotRef"]
    return ref


def _swap(items: list[Any], a: int, b: int) -> None:
    items[a], items[b] = items[b], items[a]


def _drop_last_append(d: dict[str, Any]) -> None:
    """Remove the last segment_closed and its pins, leaving its events unattested."""
    manifest = d["session"]["manifest"]
    while manifest.pop()["kind"] != "segment_closed":
        pass


INIT = snapshot_of(InitState()).to_json()

CASES = [
    # --- BUNDLE_TOO_LARGE is exercised separately (it needs a limit) ---
    Case("not_json", "BUNDLE_INVALID_FORMAT", "", lambda g: b"{oops"),
    Case("not_utf8", "BUNDLE_INVALID_FORMAT", "", lambda g: b"\xff" + encode(g)),
    Case("too_deep", "BUNDLE_INVALID_FORMAT", "", lambda g: b"[" * 300 + b"]" * 300),
    Case("not_object", "BUNDLE_INVALID_FORMAT", "", lambda g: b"[1, 2]"),
    Case(
        "duplicate_key",
        "BUNDLE_INVALID_FORMAT",
        "",
        lambda g: encode(g).replace(b'{"bundleId": ', b'{"bundleId": "x", "bundleId": ', 1),
    ),
    Case("nan", "BUNDLE_INVALID_FORMAT", "", _doc(lambda d: d.update(extra=float("nan")))),
    Case(
        "missing_version",
        "BUNDLE_INVALID_FORMAT",
        "bundleSchemaVersion",
        _doc(lambda d: d.pop("bundleSchemaVersion")),
    ),
    Case("missing_session", "BUNDLE_INVALID_FORMAT", "session", _doc(lambda d: d.pop("session"))),
    Case(
        "bad_exported_at",
        "BUNDLE_INVALID_FORMAT",
        "exportedAt",
        _doc(lambda d: d.update(exportedAt="2026-13-01T00:00:00Z")),
    ),
    Case(
        "unknown_integrity_kind",
        "BUNDLE_INVALID_FORMAT",
        "integrity/kind",
        _doc(lambda d: d["integrity"].update(kind="md5")),
    ),
    Case(
        "unknown_event_kind",
        "BUNDLE_INVALID_FORMAT",
        "session/events/3",
        _doc(lambda d: _events(d)[3].update(kind="made_up")),
    ),
    Case(
        "coerced_event_index",
        "BUNDLE_INVALID_FORMAT",
        "session/events/3",
        _doc(lambda d: _events(d)[3].update(eventIndex="3")),
    ),
    Case(
        "event_of_another_session",
        "BUNDLE_INVALID_FORMAT",
        "session/events/1/sessionId",
        _sealed(lambda d: _events(d)[1].update(sessionId=OTHER_SESSION)),
    ),
    Case(
        "manifest_of_another_session",
        "BUNDLE_INVALID_FORMAT",
        "session/manifest/1/sessionId",
        _sealed(lambda d: d["session"]["manifest"][1].update(sessionId=OTHER_SESSION)),
    ),
    Case(
        "bad_session_id",
        "BUNDLE_INVALID_FORMAT",
        "session/sessionId",
        _sealed(lambda d: d["session"].update(sessionId="../../etc")),
    ),
    Case(
        "invalid_snapshot",
        "BUNDLE_INVALID_FORMAT",
        "session/snapshots/",
        _doc(lambda d: d["session"]["snapshots"][_first_snapshot(d)].update(extra=1)),
    ),
    Case(
        "unreferenced_snapshot",
        "BUNDLE_INVALID_FORMAT",
        "session/snapshots/" + canonical_digest(INIT),
        _sealed(lambda d: d["session"]["snapshots"].update({canonical_digest(INIT): INIT})),
    ),
    Case(
        "no_events",
        "BUNDLE_INVALID_FORMAT",
        "session/events",
        _sealed(
            lambda d: d["session"].update(events=[], manifest=[], snapshots={}, pinnedWorkflows={})
        ),
    ),
    # --- version ---
    Case(
        "version_2",
        "BUNDLE_UNSUPPORTED_VERSION",
        "bundleSchemaVersion",
        _doc(lambda d: d.update(bundleSchemaVersion=2)),
    ),
    Case(
        "version_str",
        "BUNDLE_UNSUPPORTED_VERSION",
        "bundleSchemaVersion",
        _doc(lambda d: d.update(bundleSchemaVersion="1")),
    ),
    Case(
        "version_true",
        "BUNDLE_UNSUPPORTED_VERSION",
        "bundleSchemaVersion",
        _doc(lambda d: d.update(bundleSchemaVersion=True)),
    ),
    Case(
        "version_null",
        "BUNDLE_UNSUPPORTED_VERSION",
        "bundleSchemaVersion",
        _doc(lambda d: d.update(bundleSchemaVersion=None)),
    ),
    # --- integrity ---
    Case(
        "tampered_event",
        "BUNDLE_INTEGRITY_FAILED",
        "integrity/entries/0/sha256",
        _doc(lambda d: _events(d)[0].update(eventId=OTHER_EVENT)),
    ),
    Case(
        "tampered_pinned_workflow",
        "BUNDLE_INTEGRITY_FAILED",
        "integrity/entries/",
        _doc(lambda d: next(iter(d["session"]["pinnedWorkflows"].values())).update(x=1)),
    ),
    Case(
        "wrong_bytes",
        "BUNDLE_INTEGRITY_FAILED",
        "integrity/entries/1/bytes",
        _doc(
            lambda d: d["integrity"]["entries"][1].update(
                bytes=d["integrity"]["entries"][1]["bytes"] + 1
            )
        ),
    ),
    Case(
        "unknown_path",
        "BUNDLE_INTEGRITY_FAILED",
        "integrity/entries/",
        _doc(
            lambda d: d["integrity"]["entries"].append(
                dict(d["integrity"]["entries"][0], path="session/other")
            )
        ),
    ),
    Case(
        "duplicate_entry",
        "BUNDLE_INTEGRITY_FAILED",
        "integrity/entries/",
        _doc(lambda d: d["integrity"]["entries"].append(d["integrity"]["entries"][0])),
    ),
    Case(
        "dropped_snapshot_entry",
        "BUNDLE_INTEGRITY_FAILED",
        "session/snapshots/",
        _doc(lambda d: d["integrity"]["entries"].pop(2)),
    ),
    Case(
        "dropped_events_entry",
        "BUNDLE_INTEGRITY_FAILED",
        "session/events",
        _doc(lambda d: d["integrity"]["entries"].pop(0)),
    ),
    Case(
        "snapshot_under_wrong_key",
        "BUNDLE_INTEGRITY_FAILED",
        "session/snapshots/sha256:" + "0" * 64,
        _integrity_only(
            lambda d: d["session"]["snapshots"].update(
                {"sha256:" + "0" * 64: d["session"]["snapshots"][_first_snapshot(d)]}
            )
        ),
    ),
    Case(
        "segment_digest_disagrees_with_events",
        "BUNDLE_INTEGRITY_FAILED",
        "session/manifest/0/sha256",
        _integrity_only(lambda d: d["session"]["manifest"][0].update(sha256="sha256:" + "1" * 64)),
    ),
    Case(
        "event_changed_but_integrity_resealed",
        "BUNDLE_INTEGRITY_FAILED",
        "session/manifest/0/sha256",
        _integrity_only(lambda d: _events(d)[0].update(eventId=OTHER_EVENT)),
    ),
    # --- references ---
    Case(
        "missing_snapshot",
        "BUNDLE_MISSING_SNAPSHOT",
        "session/events/2/data/snapshotRef",
        _sealed(lambda d: d["session"]["snapshots"].pop(_first_snapshot(d))),
    ),
    Case(
        "missing_pinned_workflow",
        "BUNDLE_MISSING_PINNED_WORKFLOW",
        "session/events/1/data/workflowHash",
        _sealed(lambda d: d["session"]["pinnedWorkflows"].clear()),
    ),
    # --- event order ---
    Case(
        "events_swapped",
        "BUNDLE_EVENT_ORDER_INVALID",
        "session/events/3/eventIndex",
        _sealed(lambda d: _swap(_events(d), 3, 4)),
    ),
    Case(
        "event_dropped",
        "BUNDLE_EVENT_ORDER_INVALID",
        "session/events/3/eventIndex",
        _sealed(lambda d: _events(d).pop(3)),
    ),
    Case(
        "duplicate_dedupe_key",
        "BUNDLE_EVENT_ORDER_INVALID",
        "session/events/4/dedupeKey",
        _sealed(lambda d: _events(d)[4].update(dedupeKey=_events(d)[3]["dedupeKey"])),
    ),
    Case(
        "edge_to_unknown_node",
        "BUNDLE_EVENT_ORDER_INVALID",
        "session/events/",
        _sealed(
            lambda d: _events(d)[_first(d, "edge_created")]["data"].update(toNodeId=OTHER_NODE)
        ),
    ),
    # --- manifest order ---
    Case(
        "manifest_swapped",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/0/manifestIndex",
        _sealed(lambda d: _swap(d["session"]["manifest"], 0, 1)),
    ),
    Case(
        "manifest_starts_with_pin",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/0",
        _sealed(lambda d: (d["session"]["manifest"].pop(0), _renumber(d))),
    ),
    Case(
        "missing_pin",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/events/2",
        _sealed(lambda d: (d["session"]["manifest"].pop(1), _renumber(d))),
    ),
    Case(
        "pin_names_another_event",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/1",
        _sealed(lambda d: d["session"]["manifest"][1].update(createdByEventId=OTHER_EVENT)),
    ),
    Case(
        "pin_outside_its_segment",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/1/eventIndex",
        _sealed(lambda d: d["session"]["manifest"][1].update(eventIndex=len(_events(d)) - 1)),
    ),
    Case(
        "segments_do_not_chain",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/0",
        _sealed(lambda d: d["session"]["manifest"][0].update(firstEventIndex=1)),
    ),
    Case(
        "wrong_segment_path",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest/0/segmentRelPath",
        _sealed(lambda d: d["session"]["manifest"][0].update(segmentRelPath="events/other.jsonl")),
    ),
    Case(
        "unattested_tail",
        "BUNDLE_MANIFEST_ORDER_INVALID",
        "session/manifest",
        _sealed(lambda d: _drop_last_append(d)),
    ),
]


@pytest.fixture(scope="module")
def shared_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One writable copy for the whole module: rejected imports must leave it unchanged."""
    target = tmp_path_factory.mktemp("bundle_codes") / "data"
    shutil.copytree(REFERENCE / "data", target)
    return target


@pytest.fixture(scope="module")
def good(shared_data: Path) -> dict[str, Any]:
    return export_doc(LocalBackend.open(shared_data), PROBE)


def test_the_good_bundle_is_valid(good: dict[str, Any]) -> None:
    assert validate_bytes(encode(good)).unwrap()
    assert validate_bytes(encode(reseal(edited(good)))).unwrap()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_crafted_bundle_is_rejected_with_its_code_and_path(
    case: Case, good: dict[str, Any], shared_data: Path
) -> None:
    reference_data = shared_data
    raw = case.craft(good)
    before = tree_fingerprint(reference_data)
    result = import_bundle(LocalBackend.open(reference_data), raw, mint_session_id=fresh_session_id)
    assert isinstance(result, Failure), case.name
    error = result.failure()
    assert (error.code, case.name) == (case.code, case.name), error.message
    assert error.path.startswith(case.path), (error.path, error.message)
    assert error.retry == "no"
    assert error.message
    assert "export" in error.message.lower() or "import" in error.message.lower()
    wire = json.loads(json.dumps(error.to_json()))
    assert wire["code"] == case.code
    assert wire["retry"] == "no"
    assert wire["path"] == error.path
    assert tree_fingerprint(reference_data) == before, "a rejected import wrote something"


def test_too_large_is_refused_before_parsing(good: dict[str, Any], shared_data: Path) -> None:
    reference_data = shared_data
    raw = encode(good)
    before = tree_fingerprint(reference_data)
    result = import_bundle(
        LocalBackend.open(reference_data),
        raw,
        max_bytes=len(raw) - 1,
        mint_session_id=fresh_session_id,
    )
    assert isinstance(result, Failure)
    assert result.failure().code == "BUNDLE_TOO_LARGE"
    assert result.failure().details == {"limit": len(raw) - 1, "size": len(raw)}
    # not even JSON: the size check comes first
    garbage = validate_bytes(b"x" * 101, max_bytes=100)
    assert isinstance(garbage, Failure)
    assert garbage.failure().code == "BUNDLE_TOO_LARGE"
    assert tree_fingerprint(reference_data) == before
    assert MAX_BUNDLE_BYTES == 64 * 1024 * 1024


def test_every_bundle_code_is_exercised() -> None:
    assert {c.code for c in CASES} | {"BUNDLE_TOO_LARGE"} == set(BUNDLE_CODES)


def test_missing_reference_details(good: dict[str, Any]) -> None:
    doc = reseal(edited(good))
    ref = _first_snapshot(doc)
    doc["session"]["snapshots"].pop(ref)
    error = validate_bytes(encode(reseal(doc))).failure()
    assert error.details == {"missingRef": ref}
    doc = edited(good)
    wf = next(iter(doc["session"]["pinnedWorkflows"]))
    doc["session"]["pinnedWorkflows"].clear()
    error = validate_bytes(encode(reseal(doc))).failure()
    assert error.details == {"missingHash": wf}


def test_unknown_envelope_keys_are_ignored_like_the_reference(good: dict[str, Any]) -> None:
    doc = edited(good)
    doc["futureField"] = {"a": 1}
    doc["producer"]["note"] = "informational"
    assert validate_bytes(encode(doc)).unwrap()
