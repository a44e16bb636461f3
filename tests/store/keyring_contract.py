"""The keyring contract, typed against the port: every backend subclasses
`KeyringContract` and provides `open_keyring()` (a new keyring store over the same storage,
as another replica or process would open it). Concurrency is the point: creation is first
writer wins and rotations happen one after the other, whichever backend holds the keys."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from workrail.core.keyring import Keyring
from workrail.store.ports import KeyringStore

OpenKeyring = Callable[[], KeyringStore]


def _at_once(actions: list[Callable[[], Keyring]]) -> list[Keyring]:
    """Run each action on its own thread, released together; every one must succeed."""
    barrier = threading.Barrier(len(actions))
    results: list[Keyring] = []
    errors: list[BaseException] = []

    def run(action: Callable[[], Keyring]) -> None:
        barrier.wait()
        try:
            results.append(action())
        except BaseException as exc:  # reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert len(results) == len(actions)
    return results


def _loading(store: KeyringStore) -> Callable[[], Keyring]:
    return lambda: store.load().unwrap()


def _rotating(store: KeyringStore) -> Callable[[], Keyring]:
    return lambda: store.rotate().unwrap()


class KeyringContract:
    @pytest.fixture
    def open_keyring(self) -> OpenKeyring:
        raise NotImplementedError

    def test_openers_creating_the_keyring_at_once_share_one_key(
        self, open_keyring: OpenKeyring
    ) -> None:
        stores = [open_keyring() for _ in range(6)]
        keys = _at_once([_loading(store) for store in stores])
        assert len(set(keys)) == 1
        assert keys[0].previous is None

    def test_rotation_is_seen_by_every_opener(self, open_keyring: OpenKeyring) -> None:
        one, two = open_keyring(), open_keyring()
        first = one.load().unwrap()
        rotated = two.rotate().unwrap()
        assert rotated.previous == first.current
        assert rotated.current != first.current
        assert one.load().unwrap() == rotated

    def test_concurrent_rotations_happen_one_after_the_other(
        self, open_keyring: OpenKeyring
    ) -> None:
        """Each rotation starts from the key the one before it made, so every key handed
        out signs tokens that the keyring after it still verifies (as previous)."""
        stores = [open_keyring() for _ in range(8)]
        start = stores[0].load().unwrap()
        results = _at_once([_rotating(store) for store in stores])
        chain = {r.previous: r.current for r in results}
        assert len(chain) == len(results)  # no two rotations started from the same key
        current, steps = start.current, 0
        while current in chain:
            current, steps = chain[current], steps + 1
        assert steps == len(stores)
        assert stores[0].load().unwrap().current == current
