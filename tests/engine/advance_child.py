"""Child process for concurrency tests: starts a session of a long linear workflow and
advances it `rounds` times, retrying while the session is busy. Prints `STARTED <sid>`
first and `DONE <sid>` at the end.

Usage: python -m tests.engine.advance_child DATA_DIR WORKFLOWS_DIR ROUNDS
"""

from __future__ import annotations

import sys
from pathlib import Path

from returns.result import Failure

from tests.engine.conftest import make_engine


def main() -> None:
    data_dir, workflows, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    engine = make_engine(data_dir, workflows)
    r = engine.start_workflow("long-flow", {"goal": "keep writing"}).unwrap()
    sid = r["sessionId"]
    print(f"STARTED {sid}", flush=True)
    done = 0
    while done < rounds:
        result = engine.advance(r["stateToken"], r["ackToken"], notes_markdown=f"round {done}")
        if isinstance(result, Failure):
            if result.failure().retry is not None and result.failure().retry.retryable:
                continue
            raise SystemExit(f"advance failed: {result.failure()}")
        r = result.unwrap()
        done += 1
    print(f"DONE {sid}", flush=True)


if __name__ == "__main__":
    main()
