"""A full disk (a real, tiny tmpfs filled to ENOSPC): every write answers a retryable
storage error, nothing half-written is left behind, and the same call succeeds once space
is freed."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from tests.conftest import SmallDisk
from tests.engine.conftest import make_engine
from tests.engine.helpers import err, ok
from tests.store.contract import append, events_of
from tests.store.plans import Chain
from workrail.store.local.backend import LocalBackend


def _assert_storage_fault(envelope: dict[str, Any]) -> None:
    assert envelope["code"] == "STORE_UNAVAILABLE", envelope
    assert envelope["retry"]["kind"] == "retryable_after_ms"
    assert envelope["details"]["details"]["storeCode"] == "STORAGE_FAULT"
    assert "disk is full" in envelope["message"]


def test_an_append_on_a_full_disk_is_a_retryable_fault_and_the_session_stays_healthy(
    small_disk: SmallDisk,
) -> None:
    data_dir = small_disk.root / "data"
    store = LocalBackend.open(data_dir).sessions
    chain = Chain()
    append(store, chain.sess, chain.start())
    plan = chain.advance()
    small_disk.fill()
    failed = append(store, chain.sess, plan).failure()
    assert (failed.code, failed.retryable) == ("STORAGE_FAULT", True)
    fresh = LocalBackend.open(data_dir).sessions
    assert fresh.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(fresh, chain.sess)) == 3
    small_disk.free()
    assert append(store, chain.sess, plan).unwrap().deduplicated is False
    assert len(events_of(LocalBackend.open(data_dir).sessions, chain.sess)) == 6


def test_a_start_on_a_full_disk_is_retryable_and_leaves_no_session(
    small_disk: SmallDisk,
) -> None:
    data_dir = small_disk.root / "data"
    engine = make_engine(data_dir)
    ok(engine.start_workflow("probe-flow"))  # pins the workflow and the first snapshot
    sessions = LocalBackend.open(data_dir).sessions
    before = sessions.list_ids().unwrap()
    small_disk.fill()
    failure = err(engine.start_workflow("probe-flow"))
    _assert_storage_fault(failure.to_envelope())
    assert sessions.list_ids().unwrap() == before
    assert sorted(os.listdir(data_dir / "sessions")) == before  # not even an empty directory
    small_disk.free()
    started = ok(engine.start_workflow("probe-flow"))
    assert len(sessions.list_ids().unwrap()) == len(before) + 1
    assert started["pending"]["stepId"] == "plan"


def test_an_advance_on_a_full_disk_is_retryable_and_the_same_call_then_succeeds(
    small_disk: SmallDisk,
) -> None:
    data_dir = small_disk.root / "data"
    engine = make_engine(data_dir)
    start = ok(engine.start_workflow("probe-flow"))
    args = (start["stateToken"], start["ackToken"])
    small_disk.fill()
    _assert_storage_fault(err(engine.advance(*args, notes_markdown="planned")).to_envelope())
    small_disk.free()
    advanced = ok(engine.advance(*args, notes_markdown="planned"))
    assert advanced["pending"]["stepId"] == "build"
    assert ok(engine.advance(*args, notes_markdown="planned")) == advanced  # replay


def test_simulated_enospc_at_every_append_step_is_a_storage_fault(data_dir: Path) -> None:
    """A simulation (the real-disk tests above cover the same path): the fault hook raises
    ENOSPC at each step of the append protocol in turn."""
    for step in ("after_temp_write", "after_rename", "manifest_partial"):

        def full(name: str, step: str = step) -> None:
            if name == step:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "simulated")

        store = LocalBackend.open(data_dir, faults=full).sessions
        chain = Chain()
        assert append(store, chain.sess, chain.start()).failure().code == "STORAGE_FAULT"
        assert chain.sess not in store.list_ids().unwrap()
        healthy = LocalBackend.open(data_dir).sessions
        assert append(healthy, chain.sess, chain.start()).unwrap().deduplicated is False
        assert append(store, chain.sess, chain.advance()).failure().code == "STORAGE_FAULT"
        assert healthy.health(chain.sess).unwrap().kind == "healthy"


def test_archiving_on_a_full_disk_is_a_storage_fault_not_a_busy_session(
    small_disk: SmallDisk,
) -> None:
    """Only a session being written is "busy"; a full disk is a storage fault, said as
    such, and the same command succeeds once space is freed."""
    data_dir = small_disk.root / "data"
    engine = make_engine(data_dir)
    start = ok(engine.start_workflow("probe-flow"))
    sid = engine.deps.codec.parse_state(start["stateToken"]).unwrap().session_id
    small_disk.fill()
    _assert_storage_fault(err(engine.archive([sid])).to_envelope())
    small_disk.free()
    assert engine.archive([sid]).unwrap().changed == (sid,)
