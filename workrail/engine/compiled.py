"""The pinned workflows compiled so far, by workflowHash: what every call after a start
resolves its node against, compiled once per process."""

from __future__ import annotations

import threading
from typing import Any

from returns.result import Failure, Result, Success

from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.store_errors import from_store
from workrail.workflow.compiler import CompiledWorkflow, compile_pinned
from workrail.workflow.envelopes import parse_pinned


class CompiledCache:
    """Compiled workflows by workflowHash. Content-addressed, so entries never go stale."""

    def __init__(self) -> None:
        self._items: dict[str, CompiledWorkflow] = {}
        self._mutex = threading.Lock()

    def get(self, deps: EngineDeps, workflow_hash: str) -> Result[CompiledWorkflow, EngineError]:
        cached = self._items.get(workflow_hash)
        if cached is not None:
            return Success(cached)
        got = deps.pinned.get(workflow_hash)
        if isinstance(got, Failure):  # a store failure is never "missing": keep the run
            return Failure(from_store(got.failure(), "rehydrate"))
        raw: Any = got.unwrap()
        if raw is None:
            return Failure(
                error(
                    "PRECONDITION_FAILED",
                    f"Pinned workflow snapshot is missing for hash: {workflow_hash}",
                    "Re-run start_workflow or re-pin the workflow via inspect_workflow.",
                )
            )
        pinned = parse_pinned(raw)
        if isinstance(pinned, Failure):
            return Failure(
                error(
                    "PRECONDITION_FAILED",
                    f"Pinned workflow is not executable: {pinned.failure().message}",
                    "Start a new run of the workflow.",
                )
            )
        compiled = compile_pinned(pinned.unwrap())
        if isinstance(compiled, Failure):
            return Failure(
                error(
                    "INTERNAL_ERROR",
                    "Advance failed due to internal invariant violation: advance_apply_failed",
                    f"The pinned workflow does not compile: {compiled.failure().message}",
                )
            )
        value = compiled.unwrap()
        with self._mutex:
            self._items[workflow_hash] = value
        return Success(value)
