"""One mapping from store failures to wire errors, whatever the engine was doing: a full
disk and an unreachable database always say so, and only a session being written is
busy (locked)."""

from __future__ import annotations

from typing import get_args

import pytest

from workrail.engine.sessions import store_failure
from workrail.engine.store_errors import Operation, from_store, is_busy
from workrail.store.errors import StoreError, StoreErrorCode

CODES: tuple[StoreErrorCode, ...] = get_args(StoreErrorCode)
OPERATIONS: tuple[Operation, ...] = get_args(Operation)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_full_disk_is_a_storage_fault_for_every_operation(operation: Operation) -> None:
    envelope = from_store(StoreError("STORAGE_FAULT", "disk full"), operation).to_envelope()
    assert envelope["code"] == "STORE_UNAVAILABLE"
    assert envelope["details"]["details"]["storeCode"] == "STORAGE_FAULT"
    assert envelope["retry"]["kind"] == "retryable_after_ms"


@pytest.mark.parametrize("operation", OPERATIONS)
def test_an_unreachable_database_is_unavailable_for_every_operation(
    operation: Operation,
) -> None:
    envelope = from_store(StoreError("STORE_UNAVAILABLE", "down"), operation).to_envelope()
    assert envelope["code"] == "STORE_UNAVAILABLE"
    assert "storeCode" not in str(envelope)


@pytest.mark.parametrize("code", CODES)
def test_managing_sessions_maps_like_the_engine(code: StoreErrorCode) -> None:
    failure = StoreError(code, "m")
    assert store_failure(failure) == from_store(failure, "manage")
    mapped = store_failure(failure).to_envelope()
    assert (mapped["retry"]["kind"] != "not_retryable") == failure.retryable


@pytest.mark.parametrize("code", CODES)
def test_only_a_locked_session_is_busy(code: StoreErrorCode) -> None:
    assert is_busy(StoreError(code, "m")) is (code == "SESSION_LOCKED")


@pytest.mark.parametrize("operation", OPERATIONS)
def test_an_unreadable_store_asks_a_person_to_check_it(operation: Operation) -> None:
    failure = StoreError("SESSION_STORE_IO_ERROR", "Not a directory: /data/sessions")
    envelope = from_store(failure, operation).to_envelope()
    assert envelope["code"] == "STORE_UNAVAILABLE"
    assert envelope["retry"]["kind"] == "not_retryable"
    assert envelope["details"]["details"]["storeCode"] == "SESSION_STORE_IO_ERROR"
    assert "/data/sessions" in envelope["message"]
    assert "needs a person to check it" in envelope["details"]["suggestion"]
    assert "invariant" not in str(envelope)
