"""Byte-flip sweep: damage a real bundle one byte at a time. Every flip is either rejected
with a BUNDLE_* code or, where it touched only an informational field, imports exactly the
original truth. No flip may ever import different truth."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from returns.result import Failure

from tests.bundle.helpers import BLOCKED, PROBE, export, tree_fingerprint, truth
from tests.store.plans import fresh_session_id
from workrail.bundle.errors import BUNDLE_CODES
from workrail.bundle.export import bundle_bytes
from workrail.bundle.import_ import import_bundle
from workrail.store.local.backend import LocalBackend

SAMPLES = 300


def _value_span(raw: bytes, key: bytes) -> range:
    """Byte positions of the string value of `"key":"…"` (first occurrence)."""
    start = raw.index(b'"' + key + b'":"') + len(key) + 4
    return range(start, raw.index(b'"', start))


@pytest.mark.parametrize(("sid", "seed"), [(PROBE, 6), (BLOCKED, 60)])
def test_no_flip_imports_different_truth(
    reference_data: Path, data_dir: Path, sid: str, seed: int
) -> None:
    original = export(LocalBackend.open(reference_data), sid)
    raw = bundle_bytes(original)
    expected = truth(original)
    rng = random.Random(seed)
    informational = [
        *_value_span(raw, b"exportedAt"),
        *_value_span(raw, b"bundleId"),
        *_value_span(raw, b"appVersion"),
    ]
    positions = sorted(
        set(rng.sample(range(len(raw)), SAMPLES)) | set(rng.sample(informational, 12))
    )
    backend = LocalBackend.open(data_dir)
    outcomes: Counter[str] = Counter()
    before = tree_fingerprint(data_dir)
    for position in positions:
        damaged = bytearray(raw)
        damaged[position] ^= rng.randrange(1, 256)
        result = import_bundle(backend, bytes(damaged), mint_session_id=fresh_session_id)
        if isinstance(result, Failure):
            code = result.failure().code
            assert code in BUNDLE_CODES, (position, result.failure())
            outcomes[code] += 1
            if outcomes.total() % 20 == 0:  # spot-check: a rejection writes nothing
                assert tree_fingerprint(data_dir) == before, position
            continue
        imported = result.unwrap()
        again = export(LocalBackend.open(data_dir), imported.session_id)
        assert truth(again, as_session=sid) == expected, f"flip at {position} changed truth"
        outcomes["accepted"] += 1
        before = tree_fingerprint(data_dir)
    # the sweep saw both kinds of outcome, and mostly rejections
    assert outcomes["accepted"] >= 1
    assert sum(v for k, v in outcomes.items() if k != "accepted") > SAMPLES * 0.9
    assert outcomes["BUNDLE_INTEGRITY_FAILED"] > 0
    assert outcomes["BUNDLE_INVALID_FORMAT"] > 0
