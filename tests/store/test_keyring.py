"""The keyring file `keys/keyring.json` (spec 10-storage §10)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.store.keyring_contract import KeyringContract, OpenKeyring
from workrail.store.local.keyring import (
    KeyringCorrupt,
    LocalKeyringStore,
    keyring_path,
    load_or_create_keyring,
    read_keyring,
    rotate_keyring,
)

KEY_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
GOOD_KEY = "vdJbi9UyFba1aEivH2kftB4u-qvD-pmbgkLbBKT3sz8"


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_missing_keyring_reads_as_none(data_dir: Path) -> None:
    assert read_keyring(data_dir) is None
    assert not keyring_path(data_dir).exists()


def test_created_on_first_use_with_mode_0600(data_dir: Path) -> None:
    keyring = load_or_create_keyring(data_dir)
    path = keyring_path(data_dir)
    assert path == data_dir / "keys" / "keyring.json"
    st = path.stat()
    assert stat.S_ISREG(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert len(keyring.current) == 32
    assert keyring.previous is None
    assert keyring.verify_keys == (keyring.current,)
    assert not list(path.parent.glob("*.tmp"))


def test_file_format_is_jcs(data_dir: Path) -> None:
    keyring = load_or_create_keyring(data_dir)
    data = keyring_path(data_dir).read_bytes()
    key = b64(keyring.current)
    assert KEY_RE.fullmatch(key)
    expected = (
        '{"current":{"alg":"hmac_sha256","keyBase64Url":"' + key + '"},"previous":null,"v":1}'
    )
    assert data == expected.encode()


def test_stable_across_loads(data_dir: Path) -> None:
    first = load_or_create_keyring(data_dir)
    data = keyring_path(data_dir).read_bytes()
    assert load_or_create_keyring(data_dir) == first
    assert read_keyring(data_dir) == first
    assert keyring_path(data_dir).read_bytes() == data


def test_fresh_keys_differ_between_data_dirs(tmp_path: Path) -> None:
    a = load_or_create_keyring(tmp_path / "a")
    b = load_or_create_keyring(tmp_path / "b")
    assert a.current != b.current


def test_rotation_keeps_the_previous_key_and_drops_the_oldest(data_dir: Path) -> None:
    original = load_or_create_keyring(data_dir)
    rotated = rotate_keyring(data_dir)
    assert rotated.previous == original.current
    assert rotated.current != original.current
    assert rotated.verify_keys == (rotated.current, original.current)
    assert read_keyring(data_dir) == rotated
    doc = json.loads(keyring_path(data_dir).read_bytes())
    assert doc["previous"] == {"alg": "hmac_sha256", "keyBase64Url": b64(original.current)}
    assert stat.S_IMODE(keyring_path(data_dir).stat().st_mode) == 0o600

    again = rotate_keyring(data_dir)
    assert again.previous == rotated.current
    assert original.current not in again.verify_keys
    assert read_keyring(data_dir) == again


def test_rotation_creates_a_keyring_when_missing(data_dir: Path) -> None:
    rotated = rotate_keyring(data_dir)
    assert rotated.previous is not None
    assert read_keyring(data_dir) == rotated


def test_reference_keyring_loads(tmp_path: Path) -> None:
    target = tmp_path / "data"
    (target / "keys").mkdir(parents=True)
    shutil.copy(REFERENCE / "data" / "keys" / "keyring.json", target / "keys" / "keyring.json")
    (target / "keys" / "keyring.json").chmod(0o600)  # as the reference creates it
    keyring = read_keyring(target)
    assert keyring is not None
    assert b64(keyring.current) == GOOD_KEY
    assert keyring.previous is None
    assert load_or_create_keyring(target) == keyring
    # loading never rewrites the file
    assert (
        keyring_path(target).read_bytes()
        == (REFERENCE / "data" / "keys" / "keyring.json").read_bytes()
    )


def _record(key: str = GOOD_KEY) -> dict[str, Any]:
    return {"alg": "hmac_sha256", "keyBase64Url": key}


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"current": _record(), "previous": None, "v": 1}
    doc.update(changes)
    return doc


def _without(doc: dict[str, Any], *path: str) -> dict[str, Any]:
    target = doc
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return doc


CORRUPT: dict[str, bytes] = {
    "empty": b"",
    "not json": b"{not json",
    "truncated": b'{"current":{"alg":"hmac_sha256"',
    "not utf-8": b"\xff\xfe",
    "null": b"null",
    "array": b"[]",
    "key too short": json.dumps(_doc(current=_record(b64(bytes(31))))).encode(),
    "key too long": json.dumps(_doc(current=_record(b64(bytes(33))))).encode(),
    "key with padding": json.dumps(_doc(current=_record(GOOD_KEY + "="))).encode(),
    "previous too short": json.dumps(_doc(previous=_record(b64(bytes(16))))).encode(),
    "wrong alg": json.dumps(
        _doc(current={"alg": "hmac_sha512", "keyBase64Url": GOOD_KEY})
    ).encode(),
    "wrong version": json.dumps(_doc(v=2)).encode(),
    "extra top-level field": json.dumps(_doc(extra=1)).encode(),
    "extra key field": json.dumps(_doc(current={**_record(), "kid": "x"})).encode(),
    "missing current": json.dumps(_without(_doc(), "current")).encode(),
    "missing previous": json.dumps(_without(_doc(), "previous")).encode(),
    "missing key": json.dumps(_without(_doc(), "current", "keyBase64Url")).encode(),
    "missing v": json.dumps(_without(_doc(), "v")).encode(),
    "missing alg": json.dumps(_without(_doc(), "current", "alg")).encode(),
    "v is true": json.dumps(_doc(v=True)).encode(),
    "key not a string": json.dumps(
        _doc(current={"alg": "hmac_sha256", "keyBase64Url": 5})
    ).encode(),
}


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt_files_raise(data_dir: Path, name: str) -> None:
    path = keyring_path(data_dir)
    path.parent.mkdir(parents=True)
    path.write_bytes(CORRUPT[name])
    path.chmod(0o600)  # private, as a keyring must be: only its content is wrong
    with pytest.raises(KeyringCorrupt):
        read_keyring(data_dir)
    with pytest.raises(KeyringCorrupt):
        load_or_create_keyring(data_dir)
    with pytest.raises(KeyringCorrupt):
        rotate_keyring(data_dir)
    # a corrupt keyring is never replaced
    assert path.read_bytes() == CORRUPT[name]


def test_the_keyring_port_loads_rotates_and_reports_corruption_as_values(tmp_path: Path) -> None:
    from workrail.store.local.keyring import LocalKeyringStore

    port = LocalKeyringStore(tmp_path)
    first = port.load().unwrap()
    assert port.load().unwrap() == first  # created once, then read
    rotated = port.rotate().unwrap()
    assert rotated.previous == first.current
    assert rotated.current != first.current
    keyring_path(tmp_path).write_bytes(b"{not json")
    failed = port.load()
    assert failed.failure().code == "KEYRING_CORRUPT"
    assert port.rotate().failure().code == "KEYRING_CORRUPT"
    assert keyring_path(tmp_path).read_bytes() == b"{not json"  # nothing was overwritten


class TestLocalKeyring(KeyringContract):
    @pytest.fixture
    def open_keyring(self, data_dir: Path) -> OpenKeyring:
        return lambda: LocalKeyringStore(data_dir)


def test_a_rotation_waits_for_the_one_in_progress_in_another_process(data_dir: Path) -> None:
    """The rotation lock is an OS lock: one held by another process makes a rotation wait,
    and it goes on from the key that process wrote."""
    start = load_or_create_keyring(data_dir)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from filelock import FileLock\n"
            "with FileLock(sys.argv[1], preserve_lock_file=True):\n"
            "    print('HELD', flush=True); sys.stdin.readline()",
            str(data_dir / "keys" / ".rotate.lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    assert holder.stdout.readline().strip() == "HELD"
    done: list[Any] = []
    waiting = threading.Thread(target=lambda: done.append(LocalKeyringStore(data_dir).rotate()))
    waiting.start()
    waiting.join(timeout=0.5)
    assert done == []
    assert read_keyring(data_dir) == start
    holder.stdin.close()
    holder.wait(timeout=30)
    holder.stdout.close()
    waiting.join(timeout=30)
    assert done
    assert done[0].unwrap().previous == start.current
