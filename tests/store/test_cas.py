"""Content-addressed stores: snapshots and pinned workflows (spec 10-storage §8-9)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from tests.conftest import REFERENCE
from workrail.core.canonical import canonical_bytes
from workrail.store.local.backend import LocalBackend

VALUE: dict[str, Any] = {"b": [1, 2.0, "\u00e9"], "a": {"z": None, "y": True}}
JCS = canonical_bytes(VALUE)
REF = "sha256:" + hashlib.sha256(JCS).hexdigest()

STORES = {
    "snapshots": ("snapshots", "SNAPSHOT_STORE_CORRUPTION"),
    "pinned": ("workflows/pinned", "PINNED_WORKFLOW_IO_ERROR"),
}


def store_of(data_dir: Path, which: str) -> Any:
    return getattr(LocalBackend.open(data_dir), which)


def file_of(data_dir: Path, which: str, ref: str) -> Path:
    return data_dir / STORES[which][0] / (ref.replace(":", "_") + ".json")


@pytest.fixture(params=sorted(STORES))
def which(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_put_writes_jcs_bytes_named_by_their_sha256(data_dir: Path, which: str) -> None:
    ref = store_of(data_dir, which).put(VALUE).unwrap()
    assert ref == REF
    path = file_of(data_dir, which, ref)
    assert path.name == "sha256_" + hashlib.sha256(JCS).hexdigest() + ".json"
    data = path.read_bytes()
    assert data == JCS
    assert not data.endswith(b"\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_put_is_idempotent_and_write_once(data_dir: Path, which: str) -> None:
    store = store_of(data_dir, which)
    assert store.put(VALUE).unwrap() == REF
    path = file_of(data_dir, which, REF)
    os.utime(path, (1_000_000, 1_000_000))  # long ago
    before = path.stat()
    assert store.put(dict(reversed(list(VALUE.items())))).unwrap() == REF  # key order is irrelevant
    assert store_of(data_dir, which).put(VALUE).unwrap() == REF  # a fresh instance, file on disk
    after = path.stat()
    assert after.st_ino == before.st_ino  # never rewritten ...
    assert after.st_mtime > before.st_mtime  # ... but refreshed, so a collector spares it
    assert path.read_bytes() == JCS


def test_put_of_remembered_content_restores_a_collected_file(data_dir: Path, which: str) -> None:
    store = store_of(data_dir, which)
    assert store.put(VALUE).unwrap() == REF
    file_of(data_dir, which, REF).unlink()  # another process collected it
    assert store.put(VALUE).unwrap() == REF
    assert file_of(data_dir, which, REF).read_bytes() == JCS


def test_refs_are_listed_in_order_and_deleted(data_dir: Path, which: str) -> None:
    store = store_of(data_dir, which)
    refs = sorted(store.put({"n": n}).unwrap() for n in range(5))
    (file_of(data_dir, which, refs[0]).parent / ".sha256_x.json.123.tmp").write_bytes(b"{}")
    listed = store.list_refs().unwrap()
    assert [r.ref for r in listed] == refs
    assert [r.ref for r in store.list_refs(after=refs[1], limit=2).unwrap()] == refs[2:4]
    later = datetime.now(UTC) + timedelta(hours=1)
    assert store.delete(refs[0], stored_before=later).unwrap() is True
    assert store.delete(refs[0], stored_before=later).unwrap() is False
    assert store.get(refs[0]).unwrap() is None
    assert [r.ref for r in store.list_refs().unwrap()] == refs[1:]
    assert (
        store.delete("../../etc/passwd", stored_before=later).failure().code == "INVALID_REFERENCE"
    )


def test_get_round_trips(data_dir: Path, which: str) -> None:
    store_of(data_dir, which).put(VALUE).unwrap()
    for store in (store_of(data_dir, which), store_of(data_dir, which)):
        result = store.get(REF)
        assert result == Success(json.loads(JCS))


def test_missing_is_success_none(data_dir: Path, which: str) -> None:
    assert store_of(data_dir, which).get("sha256:" + "0" * 64) == Success(None)
    assert not (data_dir / STORES[which][0]).exists()


def test_tampered_byte_is_a_failure(data_dir: Path, which: str) -> None:
    store_of(data_dir, which).put(VALUE).unwrap()
    path = file_of(data_dir, which, REF)
    data = bytearray(path.read_bytes())
    data[data.index(b"true")] = ord("T")  # still the same length, no longer the same hash
    path.write_bytes(bytes(data))
    result = store_of(data_dir, which).get(REF)
    assert isinstance(result, Failure)
    assert result.failure().code == STORES[which][1]


def test_reformatted_but_equal_json_is_a_failure(data_dir: Path, which: str) -> None:
    store_of(data_dir, which).put(VALUE).unwrap()
    path = file_of(data_dir, which, REF)
    path.write_bytes(json.dumps(VALUE, indent=2).encode())
    result = store_of(data_dir, which).get(REF)
    assert isinstance(result, Failure)
    assert result.failure().code == STORES[which][1]


@pytest.mark.parametrize("content", [b"{not json", b"[1,2]", b'"text"', b"\xff"])
def test_invalid_content_under_its_own_hash_is_a_failure(
    data_dir: Path, which: str, content: bytes
) -> None:
    ref = "sha256:" + hashlib.sha256(content).hexdigest()
    path = file_of(data_dir, which, ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    result = store_of(data_dir, which).get(ref)
    assert isinstance(result, Failure)
    assert result.failure().code == STORES[which][1]


MALFORMED = [
    "../x",
    "../../etc/passwd",
    "sha256:XYZ",
    "sha256:" + "A" * 64,
    "sha256:" + "a" * 63,
    "sha256:" + "a" * 64 + "/../../x",
    "sha256:../" + "a" * 61,
    "sha256_" + "a" * 64,
    "/abs/path",
    "",
]


@pytest.mark.parametrize("ref", MALFORMED)
def test_malformed_refs_never_reach_the_file_system(
    data_dir: Path, which: str, ref: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(data_dir, which)
    (data_dir.parent / "x").write_bytes(b"{}")  # a file a traversal would find
    touched: list[str] = []
    real_open, real_read_bytes = os.open, Path.read_bytes

    def spy_open(path: Any, *args: Any, **kwargs: Any) -> int:
        touched.append(str(path))
        return real_open(path, *args, **kwargs)

    def spy_read_bytes(self: Path) -> bytes:
        touched.append(str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(Path, "read_bytes", spy_read_bytes)
    result = store.get(ref)
    monkeypatch.undo()
    assert isinstance(result, Failure)
    assert result.failure().code == "INVALID_REFERENCE"
    assert touched == []


REFERENCE_FILES = [
    ("snapshots", p) for p in sorted((REFERENCE / "data" / "snapshots").glob("*.json"))
] + [("pinned", p) for p in sorted((REFERENCE / "data" / "workflows" / "pinned").glob("*.json"))]


@pytest.mark.parametrize(
    ("kind", "path"), REFERENCE_FILES, ids=[f"{k}/{p.name[:19]}" for k, p in REFERENCE_FILES]
)
def test_put_of_reference_content_reproduces_the_reference_ref(
    data_dir: Path, kind: str, path: Path
) -> None:
    value = json.loads(path.read_bytes())
    ref = store_of(data_dir, kind).put(value).unwrap()
    assert ref.replace(":", "_") + ".json" == path.name
    assert file_of(data_dir, kind, ref).read_bytes() == path.read_bytes()


def test_reference_files_verify_on_get(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    for kind, path in REFERENCE_FILES:
        ref = path.name.removesuffix(".json").replace("_", ":", 1)
        result = getattr(backend, kind).get(ref)
        assert isinstance(result, Success), (kind, path.name)
        assert result.unwrap() == json.loads(path.read_bytes())


def test_the_decoded_cache_is_bounded_by_bytes_newest_kept(data_dir: Path) -> None:
    """Step n of a long run stores an O(n) snapshot: a count bound alone kept O(n²)."""
    from workrail.store.local.cas import LocalSnapshotStore
    from workrail.store.local.layout import Layout

    store = LocalSnapshotStore(Layout(data_dir), cache_bytes=50_000)
    refs = [store.put({"values": [f"s{j}" for j in range(i)]}).unwrap() for i in range(0, 2000, 50)]
    assert store._cache.held_bytes <= 50_000
    kept = [ref for ref in refs if ref in store._cache]
    assert kept == refs[-len(kept) :]
    assert kept
    # what fell out of memory is read back from disk, verified
    assert store.get(refs[0]).unwrap() == {"values": []}


def test_content_a_collector_left_aside_is_read_and_kept(data_dir: Path, which: str) -> None:
    """A collector renames a file aside before judging it; one killed in between leaves
    the content under the aside name, which a read puts back (never over a newer file)."""
    store_of(data_dir, which).put(VALUE).unwrap()
    path = file_of(data_dir, which, REF)
    aside = path.with_name(f".{path.name}.gc")
    os.rename(path, aside)
    fresh = store_of(data_dir, which)
    assert [r.ref for r in fresh.list_refs().unwrap()] == []  # the aside name is no entry
    assert fresh.get(REF) == Success(json.loads(JCS))
    assert path.read_bytes() == JCS
