"""Token keys follow the keyring store: a rotation made anywhere reaches a running server
without a restart, and bad signatures cannot make it hammer the store."""

from __future__ import annotations

import threading
from pathlib import Path

from returns.result import Failure, Result

from tests.store.plans import new_id
from workrail.core.keyring import Keyring
from workrail.engine.signing import KeyringCodec
from workrail.store.errors import StoreError
from workrail.store.local.keyring import LocalKeyringStore

SESS, NODE, WF = new_id("sess"), new_id("node"), "sha256:" + "c" * 64


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingStore:
    """The real file keyring store, counting how often it is read."""

    def __init__(self, store: LocalKeyringStore) -> None:
        self.store = store
        self.loads = 0

    def load(self) -> Result[Keyring, StoreError]:
        self.loads += 1
        return self.store.load()

    def rotate(self) -> Result[Keyring, StoreError]:
        return self.store.rotate()

    def adopt(self, keyring: Keyring) -> Result[Keyring, StoreError]:
        return self.store.adopt(keyring)


def _codec(data_dir: Path, clock: Clock) -> tuple[KeyringCodec, CountingStore]:
    store = CountingStore(LocalKeyringStore(data_dir))
    return KeyringCodec(store, store.load().unwrap(), clock=clock), store


def _mint(codec: KeyringCodec) -> str:
    return codec.mint_state(session_id=SESS, node_id=NODE, workflow_hash=WF)


def test_a_token_signed_after_a_rotation_elsewhere_verifies_at_once(data_dir: Path) -> None:
    clock = Clock()
    old, _ = _codec(data_dir, clock)
    before = _mint(old)
    LocalKeyringStore(data_dir).rotate().unwrap()
    rotated, _ = _codec(data_dir, clock)
    after = _mint(rotated)
    assert after != before
    assert old.parse_state(after).unwrap().session_id == SESS  # re-loaded on the bad MAC
    assert rotated.parse_state(before).unwrap().session_id == SESS  # previous key still valid


def test_signing_moves_to_the_new_key_within_the_refresh_period(data_dir: Path) -> None:
    clock = Clock()
    codec, _ = _codec(data_dir, clock)
    first = _mint(codec)
    LocalKeyringStore(data_dir).rotate().unwrap()
    clock.now += 29
    assert _mint(codec) == first
    clock.now += 2
    fresh = _mint(codec)
    assert fresh != first
    fresh_keys = LocalKeyringStore(data_dir).load().unwrap()
    only_new = KeyringCodec(
        CountingStore(LocalKeyringStore(data_dir)), Keyring(fresh_keys.current, None)
    )
    assert only_new.parse_state(fresh).unwrap().node_id == NODE


def test_forged_tokens_reload_the_keyring_at_most_once_per_recheck_period(data_dir: Path) -> None:
    clock = Clock()
    codec, store = _codec(data_dir, clock)
    token = _mint(codec)
    forged = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    loads = store.loads
    for _ in range(20):
        result = codec.parse_state(forged)
        assert isinstance(result, Failure)
        assert result.failure().code == "TOKEN_BAD_SIGNATURE"
    assert store.loads == loads + 1
    clock.now += 2.5
    codec.parse_state(forged)
    assert store.loads == loads + 2


def test_a_store_that_cannot_be_read_keeps_the_current_keys(data_dir: Path) -> None:
    clock = Clock()
    codec, _ = _codec(data_dir, clock)
    token = _mint(codec)
    (data_dir / "keys" / "keyring.json").write_text("{not json")
    clock.now += 60
    assert _mint(codec) == token
    assert codec.parse_state(token).unwrap().session_id == SESS


class StaleTogetherClock(Clock):
    """Once armed, a thread's second read of the clock (made under the codec's mutex, by
    whichever thread got there first) waits until every thread has made its first (the
    staleness check, outside the mutex): so all of them find the keys stale at once."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads
        self.reads: dict[int, int] = {}
        self.first_reads = 0
        self.all_checked = threading.Event()
        self.mutex = threading.Lock()
        self.armed = False

    def __call__(self) -> float:
        if self.armed:
            me = threading.get_ident()
            with self.mutex:
                self.reads[me] = self.reads.get(me, 0) + 1
                nth = self.reads[me]
                if nth == 1:
                    self.first_reads += 1
                    if self.first_reads == self.threads:
                        self.all_checked.set()
            if nth == 2:
                assert self.all_checked.wait(timeout=30)
        return self.now


def test_threads_finding_the_keys_stale_at_once_load_them_once(data_dir: Path) -> None:
    clock = StaleTogetherClock(8)
    codec, store = _codec(data_dir, clock)
    loads = store.loads
    clock.now += 31
    clock.armed = True
    threads = [threading.Thread(target=_mint, args=(codec,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert store.loads - loads == 1


class GatedStore(CountingStore):
    """Once armed, a load announces itself and then waits for the gate: a slow keyring
    store, held exactly as long as the test says."""

    def __init__(self, store: LocalKeyringStore) -> None:
        super().__init__(store)
        self.armed = False
        self.loading = threading.Event()
        self.gate = threading.Event()

    def load(self) -> Result[Keyring, StoreError]:
        if self.armed:
            self.loading.set()
            assert self.gate.wait(timeout=60)
        return super().load()


def test_a_verification_during_a_reload_waits_for_it_instead_of_refusing(
    data_dir: Path,
) -> None:
    """After a rotation elsewhere, two verifications of a token signed with the new key
    arrive together: the first starts the reload (and sets the throttle), the second
    must wait for that reload, not answer TOKEN_BAD_SIGNATURE."""
    clock = Clock()
    store = GatedStore(LocalKeyringStore(data_dir))
    codec = KeyringCodec(store, store.load().unwrap(), clock=clock)
    LocalKeyringStore(data_dir).rotate().unwrap()
    rotated = KeyringCodec(LocalKeyringStore(data_dir), LocalKeyringStore(data_dir).load().unwrap())
    token = _mint(rotated)
    store.armed = True
    outcomes: dict[str, bool] = {}

    def verify(name: str) -> None:
        outcomes[name] = not isinstance(codec.parse_state(token), Failure)

    first = threading.Thread(target=verify, args=("first",))
    first.start()
    assert store.loading.wait(timeout=30)  # the first is inside its reload now
    second = threading.Thread(target=verify, args=("second",))
    second.start()
    second.join(timeout=1.0)  # refusing at once would be done by now; waiting is not
    store.gate.set()
    for thread in (first, second):
        thread.join(timeout=30)
    assert outcomes == {"first": True, "second": True}
    assert store.loads == 2  # the one at start and the one reload: the second only waited
