"""The engine's one cache of compiled workflows: bounded by the bytes of the pinned
workflows it holds, keeping what the content says and asking the store again for what
the store says."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from returns.result import Failure, Success

from workrail.core.canonical import canonical_bytes
from workrail.engine.compiled import CompiledCache, Uncompiled, as_result
from workrail.store.memory import MemoryBackend
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.envelopes import pin_workflow


def _definition(workflow_id: str, steps: int = 3) -> dict[str, Any]:
    return {
        "id": workflow_id,
        "name": workflow_id,
        "description": "d",
        "version": "1.0.0",
        "steps": [{"id": f"s{i}", "title": f"S{i}", "prompt": f"Do {i}."} for i in range(steps)],
    }


def _reopened(backend: MemoryBackend) -> MemoryBackend:
    """Another backend over the same rows: its own content cache, as another process."""
    return MemoryBackend.open(lambda: datetime.now(UTC), backend.storage)


def _stored(backend: MemoryBackend, workflow_id: str, steps: int = 3) -> tuple[str, int]:
    envelope = pin_workflow(_definition(workflow_id, steps)).to_json()
    stored = backend.pinned.put(envelope)
    assert isinstance(stored, Success)
    return stored.unwrap(), len(canonical_bytes(envelope))


def test_a_workflow_is_compiled_once_and_read_from_the_store_once() -> None:
    backend = MemoryBackend.open(lambda: datetime.now(UTC))
    workflow_hash, _ = _stored(backend, "a")
    cache = CompiledCache()
    first = cache.compiled(backend.pinned, workflow_hash)
    assert isinstance(first, CompiledWorkflow)
    backend.storage.pinned.clear()  # gone from the store: the cache still answers
    assert cache.compiled(_reopened(backend).pinned, workflow_hash) is first


def test_the_cache_holds_at_most_its_bytes_newest_kept() -> None:
    backend = MemoryBackend.open(lambda: datetime.now(UTC))
    stored = [_stored(backend, f"w{i}", steps=40) for i in range(6)]
    cache = CompiledCache(max_bytes=3 * stored[0][1], max_entries=100)
    for workflow_hash, _ in stored:
        assert isinstance(cache.compiled(backend.pinned, workflow_hash), CompiledWorkflow)
    backend.storage.pinned.clear()
    emptied = _reopened(backend)
    kept = [isinstance(cache.compiled(emptied.pinned, h), CompiledWorkflow) for h, _ in stored]
    assert kept == [False, False, False, True, True, True]


def test_a_missing_workflow_is_asked_again_and_an_invalid_one_is_remembered() -> None:
    backend = MemoryBackend.open(lambda: datetime.now(UTC))
    cache = CompiledCache()
    workflow_hash, _ = _stored(backend, "late")
    content = dict(backend.storage.pinned)
    backend.storage.pinned.clear()
    missing = cache.compiled(_reopened(backend).pinned, workflow_hash)
    assert isinstance(missing, Uncompiled)
    assert missing.why == "missing"
    backend.storage.pinned.update(content)
    assert isinstance(cache.compiled(_reopened(backend).pinned, workflow_hash), CompiledWorkflow)
    invalid = backend.pinned.put({"kind": "wr.workflow_pinned", "workflowId": 7})
    assert isinstance(invalid, Success)
    bad = cache.compiled(backend.pinned, invalid.unwrap())
    assert isinstance(bad, Uncompiled)
    assert bad.why == "invalid"
    backend.storage.pinned.clear()  # what the content says is remembered
    assert cache.compiled(_reopened(backend).pinned, invalid.unwrap()) == bad


def test_the_engine_answers_a_missing_workflow_with_the_spec_error() -> None:
    backend = MemoryBackend.open(lambda: datetime.now(UTC))
    found = CompiledCache().compiled(backend.pinned, "sha256:" + "0" * 64)
    assert isinstance(found, Uncompiled)
    assert found.why == "missing"
    answered = as_result(found, "sha256:" + "0" * 64)
    assert isinstance(answered, Failure)
    assert answered.failure().code == "PRECONDITION_FAILED"
