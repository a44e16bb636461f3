"""Child process for the killed-import tests: imports a bundle into the backend the
environment configures (through the composition root, so every backend runs it), and
with KILL_AFTER >= 0 SIGKILLs itself right after that many appends of the import
succeeded — an import interrupted half-way.

Usage: python -m tests.bundle.import_child BUNDLE KILL_AFTER
Prints the import result as one JSON line (or the error) when it is not killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from returns.result import Failure, Result

from tests.store.plans import fresh_session_id
from workrail.app import open_backend
from workrail.bundle.import_ import import_bundle
from workrail.config import config_from_process
from workrail.store.errors import StoreError
from workrail.store.ports import AppendOutcome, AppendPlan, Backend, SessionLog, WriteTxn


class _KillingTxn:
    def __init__(self, inner: WriteTxn, after: int) -> None:
        self._inner = inner
        self._after = after
        self._count = 0

    @property
    def log(self) -> SessionLog:
        return self._inner.log

    def append(self, plan: AppendPlan) -> Result[AppendOutcome, StoreError]:
        result = self._inner.append(plan)
        self._count += 1
        if self._count == self._after:
            os.kill(os.getpid(), signal.SIGKILL)
        return result


class _KillingSessions:
    def __init__(self, inner: Any, after: int) -> None:
        self._inner = inner
        self._after = after

    def write(self, session_id: str, fn: Callable[[Any], Any]) -> Any:
        return self._inner.write(session_id, lambda txn: fn(_KillingTxn(txn, self._after)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Backend:
    def __init__(self, inner: Backend, after: int) -> None:
        self.sessions = _KillingSessions(inner.sessions, after)
        self.snapshots = inner.snapshots
        self.pinned = inner.pinned


def main() -> None:
    bundle, kill_after = Path(sys.argv[1]), int(sys.argv[2])
    backend = open_backend(config_from_process().unwrap()).unwrap()
    try:
        target: Any = _Backend(backend, kill_after) if kill_after >= 0 else backend
        result = import_bundle(target, bundle.read_bytes(), mint_session_id=fresh_session_id)
        if isinstance(result, Failure):
            print(json.dumps({"error": result.failure().to_json()}), flush=True)
            sys.exit(1)
        print(json.dumps(result.unwrap().to_json()), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main()
