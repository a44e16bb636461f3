"""Holds one session's writer lock until stdin closes. Prints READY once it holds it.

Usage: python -m tests.engine.hold_lock_child DATA_DIR SESSION_ID
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from returns.result import Success

from workrail.store.local.backend import LocalBackend


def main() -> None:
    store = LocalBackend.open(Path(sys.argv[1])).sessions

    def hold(_txn: Any) -> Any:
        print("READY", flush=True)
        sys.stdin.read()
        return Success(None)

    store.write(sys.argv[2], hold).unwrap()


if __name__ == "__main__":
    main()
