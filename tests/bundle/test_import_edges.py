from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from tests.bundle.helpers import PROBE, export, tree_fingerprint, truth
from tests.store.plans import fresh_session_id
from workrail.bundle.export import bundle_bytes
from workrail.bundle.import_ import import_bundle, read_bundle_file
from workrail.bundle.validate import MAX_BUNDLE_BYTES
from workrail.core.ids import make_id
from workrail.store.local.backend import LocalBackend


def test_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_BUNDLE_BYTES + 1)  # sparse: nothing is read
    result = read_bundle_file(big)
    assert isinstance(result, Failure)
    assert result.failure().code == "BUNDLE_TOO_LARGE"
    stream = read_bundle_file(io.BytesIO(b"x" * 11), max_bytes=10)
    assert isinstance(stream, Failure)
    assert stream.failure().code == "BUNDLE_TOO_LARGE"
    assert read_bundle_file(io.BytesIO(b"{}"), max_bytes=10).unwrap() == b"{}"


def test_salvage_bundle_imports_its_prefix(reference_data: Path, data_dir: Path) -> None:
    segment = max((reference_data / "sessions" / PROBE / "events").iterdir())
    segment.write_bytes(segment.read_bytes()[:-2] + b"x\n")
    bundle = export(LocalBackend.open(reference_data), PROBE)
    assert bundle.salvage is not None
    result = import_bundle(
        LocalBackend.open(data_dir), bundle_bytes(bundle), mint_session_id=fresh_session_id
    ).unwrap()
    assert result.salvage == bundle.salvage
    assert LocalBackend.open(data_dir).sessions.health(PROBE).unwrap().is_healthy
    assert truth(export(LocalBackend.open(data_dir), PROBE)) == truth(bundle)


class _RacingSessions:
    """Sessions store whose target id is claimed by another writer just before we write."""

    def __init__(self, inner: Any, claim: str) -> None:
        self._inner = inner
        self._claim = claim
        self.claimed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def write(self, session_id: str, fn: Any) -> Result[Any, Any]:
        if session_id == self._claim and not self.claimed:
            self.claimed = True
            raw = bundle_bytes(export(LocalBackend.open(self._source), PROBE))
            other = import_bundle(
                LocalBackend.open(self._target), raw, mint_session_id=fresh_session_id
            )
            assert isinstance(other, Success)
        written: Result[Any, Any] = self._inner.write(session_id, fn)
        return written


def test_an_id_claimed_during_import_is_never_merged(reference_data: Path, data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    racing = _RacingSessions(backend.sessions, PROBE)
    racing._source, racing._target = reference_data, data_dir  # type: ignore[attr-defined]

    class _Backend:
        sessions = racing
        snapshots = backend.snapshots
        pinned = backend.pinned

    fresh = make_id("sess", b"\x0a" * 16)
    raw = bundle_bytes(export(LocalBackend.open(reference_data), PROBE))
    result = import_bundle(_Backend(), raw, mint_session_id=lambda: fresh).unwrap()
    assert racing.claimed
    assert result.session_id == fresh
    assert result.renamed
    # both sessions hold the same truth, separately
    store = LocalBackend.open(data_dir)
    assert truth(export(store, fresh), as_session=PROBE) == truth(export(store, PROBE))


def test_import_is_idempotent_in_effect_never_in_identity(
    reference_data: Path, data_dir: Path
) -> None:
    raw = bundle_bytes(export(LocalBackend.open(reference_data), PROBE))
    backend = LocalBackend.open(data_dir)
    first = import_bundle(backend, raw, mint_session_id=fresh_session_id).unwrap()
    snapshot_files = tree_fingerprint(data_dir / "snapshots")
    second = import_bundle(backend, raw, mint_session_id=fresh_session_id).unwrap()
    assert first.session_id != second.session_id
    assert tree_fingerprint(data_dir / "snapshots") == snapshot_files  # content-addressed
