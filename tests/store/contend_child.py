"""Child process for contention tests: appends `rounds` advances to one session, retrying
when the session is locked. Prints `READY` once started and waits for a line on stdin, so
every contender starts at the same moment; prints `LOCKED <n>` and `DONE <n>` at the end.

Usage: python -m tests.store.contend_child DATA_DIR SESSION_ID ROUNDS
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from returns.result import Failure, Success

from tests.store.plans import advance_plan, new_id
from workrail.store.local.backend import LocalBackend


def main() -> None:
    data_dir, sess, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = LocalBackend.open(data_dir).sessions
    done = locked = 0

    def advance(txn: Any) -> Any:
        log = txn.log
        run = next(iter(log.index.runs))
        tip = log.index.preferred_tip(run)
        plan = advance_plan(sess, run, log.count, tip, new_id("node"), new_id("attempt"))
        time.sleep(0.002)  # hold the lock a moment so contenders really collide
        return txn.append(plan)

    print("READY", flush=True)
    sys.stdin.readline()  # the starting gun: all contenders are up
    while done < rounds:
        result = store.write(sess, advance)
        if isinstance(result, Success):
            done += 1
        elif isinstance(result, Failure):
            error = result.failure()
            if error.code != "SESSION_LOCKED" or not error.retryable:
                print(f"ERROR {error.code} {error.message}", flush=True)
                sys.exit(1)
            locked += 1
            time.sleep(0.001)
    print(f"LOCKED {locked}", flush=True)
    print(f"DONE {done}", flush=True)


if __name__ == "__main__":
    main()
