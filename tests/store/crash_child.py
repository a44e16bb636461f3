"""Child process for crash-injection tests: appends plans and SIGKILLs itself at one named
step of the append protocol during append number `kill_at`.

Usage: python -m tests.store.crash_child DATA_DIR STEP KILL_AT
Prints `SESSION <id>` first, then `ACK <lastEventIndex>` after each acknowledged append.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path

from returns.result import Result

from tests.store.plans import Chain
from workrail.store.errors import StoreError
from workrail.store.local.backend import LocalBackend
from workrail.store.ports import AppendOutcome, AppendPlan, WriteTxn


def _append(plan: AppendPlan, txn: WriteTxn) -> Result[AppendOutcome, StoreError]:
    return txn.append(plan)


def main() -> None:
    data_dir, step, kill_at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    count = 0

    def hook(name: str) -> None:
        if name == step and count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    store = LocalBackend.open(data_dir, faults=hook).sessions
    chain = Chain()
    print(f"SESSION {chain.sess}", flush=True)
    plans = [chain.start()] + [chain.advance() for _ in range(kill_at + 2)]
    for plan in plans:
        result = store.write(chain.sess, functools.partial(_append, plan))
        result.unwrap()
        print(f"ACK {plan.events[-1].eventIndex}", flush=True)
        count += 1


if __name__ == "__main__":
    main()
