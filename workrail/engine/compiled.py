"""The pinned workflows compiled so far, by workflowHash: what every call after a start
resolves its node against, compiled once per process, and what the session inspector
renders prompts with. One cache, bounded by the bytes of the pinned workflows it holds
(see docs/storage.md, "Memory")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from returns.result import Failure, Result, Success

from workrail.core.canonical import CanonicalJsonError, canonical_bytes
from workrail.core.weighted_lru import WeightedLru
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.store_errors import from_store
from workrail.store.errors import StoreError
from workrail.store.ports import PinnedWorkflowStore
from workrail.workflow.compiler import CompiledWorkflow, compile_pinned
from workrail.workflow.envelopes import PinnedWorkflow, parse_pinned

COMPILED_CACHE_BYTES: Final = 16 * 2**20
"""The canonical bytes of the pinned workflows kept compiled, at most (a compiled workflow
holds a few times its JSON size)."""
COMPILED_CACHE_ENTRIES: Final = 256
"""And at most this many workflows."""


@dataclass(frozen=True)
class Uncompiled:
    """Why a pinned workflow gives no compiled workflow. `unreadable` and `missing` are
    facts about the store now, asked again next time; `invalid` and `uncompilable` are
    facts about the content, which its hash fixes, so they are kept."""

    why: Literal["unreadable", "missing", "invalid", "uncompilable"]
    message: str = ""
    store_error: StoreError | None = None


class CompiledCache:
    """Compiled workflows (or why the content does not compile) by workflowHash.
    Content-addressed, so entries never go stale. Thread-safe."""

    def __init__(
        self, max_bytes: int = COMPILED_CACHE_BYTES, max_entries: int = COMPILED_CACHE_ENTRIES
    ) -> None:
        self._items: WeightedLru[CompiledWorkflow | Uncompiled] = WeightedLru(
            max_bytes, max_entries
        )

    def compiled(
        self, pinned: PinnedWorkflowStore, workflow_hash: str
    ) -> CompiledWorkflow | Uncompiled:
        """The pinned workflow `workflow_hash` compiled, or why not."""
        known = self._items.get(workflow_hash)
        if known is not None:
            return known
        got = pinned.get(workflow_hash)
        if isinstance(got, Failure):
            return Uncompiled("unreadable", got.failure().message, got.failure())
        raw = got.unwrap()
        if raw is None:
            return Uncompiled("missing")
        parsed = parse_pinned(raw)
        if isinstance(parsed, Failure):
            invalid = Uncompiled("invalid", parsed.failure().message)
            self._items.put(workflow_hash, invalid, _weight(raw))
            return invalid
        return self._compile(workflow_hash, parsed.unwrap(), raw)

    def of_pinned(
        self, workflow_hash: str, pinned: PinnedWorkflow
    ) -> CompiledWorkflow | Uncompiled:
        """As `compiled`, from the pinned workflow a start has just stored (rather than
        read back from the store)."""
        known = self._items.get(workflow_hash)
        if known is not None:
            return known
        return self._compile(workflow_hash, pinned, pinned.to_json())

    def _compile(
        self, workflow_hash: str, pinned: PinnedWorkflow, raw: object
    ) -> CompiledWorkflow | Uncompiled:
        compiled = compile_pinned(pinned)
        result = (
            compiled.unwrap()
            if isinstance(compiled, Success)
            else Uncompiled("uncompilable", compiled.failure().message)
        )
        self._items.put(workflow_hash, result, _weight(raw))
        return result

    def get(self, deps: EngineDeps, workflow_hash: str) -> Result[CompiledWorkflow, EngineError]:
        """The compiled workflow a call resolves against, or the spec's error for it."""
        return as_result(self.compiled(deps.pinned, workflow_hash), workflow_hash)


def as_result(
    found: CompiledWorkflow | Uncompiled, workflow_hash: str
) -> Result[CompiledWorkflow, EngineError]:
    """A lookup's outcome as the engine answers it."""
    if isinstance(found, CompiledWorkflow):
        return Success(found)
    if found.store_error is not None:  # a store failure is never "missing": keep the run
        return Failure(from_store(found.store_error, "rehydrate"))
    return Failure(_engine_error(found, workflow_hash))


def _engine_error(found: Uncompiled, workflow_hash: str) -> EngineError:
    if found.why == "missing":
        return error(
            "PRECONDITION_FAILED",
            f"Pinned workflow snapshot is missing for hash: {workflow_hash}",
            "Re-run start_workflow or re-pin the workflow via inspect_workflow.",
        )
    if found.why == "invalid":
        return error(
            "PRECONDITION_FAILED",
            f"Pinned workflow is not executable: {found.message}",
            "Start a new run of the workflow.",
        )
    return error(
        "INTERNAL_ERROR",
        "Advance failed due to internal invariant violation: advance_apply_failed",
        f"The pinned workflow does not compile: {found.message}",
    )


def _weight(raw: object) -> int:
    try:
        return len(canonical_bytes(raw))
    except CanonicalJsonError:
        return 1
