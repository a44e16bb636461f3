"""The keyring file `keys/keyring.json` (the document of `workrail.core.keyring`).

Created with mode 0600 on first use, first writer wins; `rotate` moves current to
previous. `LocalKeyringStore` is the keyring port over a data directory.

Whoever can change the keyring can sign tokens, so it is read only when it is a regular
file owned by this user that group and others cannot access, in a `keys/` directory only
this user can write (`allow_insecure` turns that refusal into a logged warning). A
missing keyring is created afresh, and said so in the log: tokens signed with the old
key stop verifying.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout
from returns.result import Failure, Result, Success

from workrail.core.keyring import (
    KEY_BYTES,
    Keyring,
    KeyringCorrupt,
    decode_keyring,
    encode_keyring,
)
from workrail.store.errors import StoreError, io_error
from workrail.store.fsio import (
    NotPrivate,
    UnsafePath,
    atomic_write,
    create_exclusive,
    ensure_tree,
    read_private,
)

__all__ = [
    "Keyring",
    "KeyringCorrupt",
    "LocalKeyringStore",
    "keyring_path",
    "load_or_create_keyring",
    "read_keyring",
    "rotate_keyring",
]

log = logging.getLogger("workrail.store")

ROTATE_WAIT_SECONDS = 30.0
"""How long a rotation waits for another one to finish before saying the keyring is busy."""

_T = TypeVar("_T")


def keyring_path(data_dir: Path) -> Path:
    return data_dir / "keys" / "keyring.json"


def read_keyring(data_dir: Path, *, allow_insecure: bool = False) -> Keyring | None:
    """The keyring on disk, or None when there is none. Raises `KeyringCorrupt` (also for
    a link or non-regular file), `NotPrivate`, or OSError."""
    path = keyring_path(data_dir)
    try:
        raw = read_private(path, allow_shared=allow_insecure)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise KeyringCorrupt(f"{path.name}: {exc}") from exc
    return decode_keyring(raw, path.name)


def load_or_create_keyring(data_dir: Path, *, allow_insecure: bool = False) -> Keyring:
    """Load the keyring, creating it (0600) with a fresh random key when missing."""
    return _load_or_create(data_dir, allow_insecure, None)


def _load_or_create(data_dir: Path, allow_insecure: bool, keys_existed: bool | None) -> Keyring:
    existing = read_keyring(data_dir, allow_insecure=allow_insecure)
    if existing is not None:
        return existing
    fresh = Keyring(current=os.urandom(KEY_BYTES), previous=None)
    # First writer wins: processes racing to create the keyring all end up with the one
    # key that was published, never with a private key of their own.
    if keys_existed is None:
        keys_existed = os.path.lexists(keyring_path(data_dir).parent)
    if create_exclusive(keyring_path(data_dir), encode_keyring(fresh), root=data_dir):
        _log_created(data_dir, keys_existed)
    published = read_keyring(data_dir, allow_insecure=allow_insecure)
    assert published is not None
    return published


def _log_created(data_dir: Path, keys_existed: bool) -> None:
    has_sessions = keys_existed or _sessions_older_than_this_process(data_dir)
    if has_sessions:
        log.warning(
            "%s was missing: created a new token signing key. Tokens issued before were "
            "signed with another key and no longer verify (TOKEN_BAD_SIGNATURE); the "
            "sessions are intact. Restore the old keyring from a backup to keep those "
            "tokens, or get fresh ones (resume_session, or export and import the session).",
            keyring_path(data_dir),
        )
    else:
        log.info("created a new token signing key in %s", keyring_path(data_dir))


_STARTED = time.time()
_LOOK_AT = 64


def _sessions_older_than_this_process(data_dir: Path) -> bool:
    """Whether sessions were written before this process started (so a keyring must have
    signed their tokens), as opposed to ones this process just imported."""
    try:
        with os.scandir(data_dir / "sessions") as entries:
            for seen, entry in enumerate(entries):
                if seen >= _LOOK_AT:
                    return False
                try:
                    if os.lstat(Path(entry.path) / "manifest.jsonl").st_mtime < _STARTED:
                        return True
                except OSError:
                    continue
    except OSError:
        return False
    return False


def rotate_lock_path(data_dir: Path) -> Path:
    return data_dir / "keys" / ".rotate.lock"


def rotate_keyring(data_dir: Path, *, allow_insecure: bool = False) -> Keyring:
    """previous := current, current := fresh random key. Returns the new keyring.

    A read-modify-write, so it runs under an OS lock on `keys/.rotate.lock`: two rotations
    at once would both start from the same current key and the second would drop the
    first's new key (tokens signed with it would stop verifying). The lock file is kept
    on release, so no waiter ever locks an unlinked inode. Raises filelock's `Timeout`
    when another rotation holds the lock for longer than `ROTATE_WAIT_SECONDS`."""
    keys_existed = os.path.lexists(keyring_path(data_dir).parent)
    ensure_tree(data_dir, keyring_path(data_dir).parent)
    lock = FileLock(
        rotate_lock_path(data_dir),
        timeout=ROTATE_WAIT_SECONDS,
        mode=0o600,
        preserve_lock_file=True,
    )
    with lock:
        current = _load_or_create(data_dir, allow_insecure, keys_existed)
        new = current.rotated(os.urandom(KEY_BYTES))
        atomic_write(keyring_path(data_dir), encode_keyring(new), root=data_dir)
        return new


def _as_result(action: Callable[[], _T]) -> Result[_T, StoreError]:
    """A keyring operation's exceptions as the port's error values."""
    try:
        return Success(action())
    except KeyringCorrupt as exc:
        return Failure(StoreError("KEYRING_CORRUPT", str(exc)))
    except NotPrivate as exc:
        return Failure(StoreError("KEYRING_INSECURE", str(exc)))
    except Timeout:
        return Failure(
            StoreError(
                "STORE_UNAVAILABLE",
                "another process is rotating the keyring; run the command again",
            )
        )
    except OSError as exc:
        return Failure(io_error(exc, "KEYRING_IO_ERROR", "cannot use the keyring"))


class LocalKeyringStore:
    """The keyring port over `<data>/keys/keyring.json`."""

    def __init__(self, data_dir: Path, *, allow_insecure: bool = False) -> None:
        self._data_dir = data_dir
        self._allow_insecure = allow_insecure

    def load(self) -> Result[Keyring, StoreError]:
        return _as_result(
            lambda: load_or_create_keyring(self._data_dir, allow_insecure=self._allow_insecure)
        )

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        def adopt() -> Keyring:
            insecure = self._allow_insecure
            if read_keyring(self._data_dir, allow_insecure=insecure) is None:
                path = keyring_path(self._data_dir)
                create_exclusive(path, encode_keyring(keyring), root=self._data_dir)
            published = read_keyring(self._data_dir, allow_insecure=insecure)
            assert published is not None
            return published

        return _as_result(adopt)

    def rotate(self) -> Result[Keyring, StoreError]:
        return _as_result(
            lambda: rotate_keyring(self._data_dir, allow_insecure=self._allow_insecure)
        )
