"""Holds one session's writer lock until stdin closes. Prints READY once it holds it.

Usage: python -m tests.engine.hold_lock_child DATA_DIR SESSION_ID
(tests run it through `writer_in_another_process`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from returns.result import Success

from workrail.store.local.backend import LocalBackend

ROOT = Path(__file__).resolve().parents[2]


def writer_in_another_process(data_dir: Path) -> Any:
    """A context manager factory: hold a session's writer from a child process (until the
    block ends)."""

    @contextmanager
    def in_another_process(session_id: str) -> Iterator[None]:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.engine.hold_lock_child", str(data_dir), session_id],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "READY"
            yield
        finally:
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.close()
            child.wait(timeout=60)
            child.stdout.close()

    return in_another_process


def main() -> None:
    store = LocalBackend.open(Path(sys.argv[1])).sessions

    def hold(_txn: Any) -> Any:
        print("READY", flush=True)
        sys.stdin.read()
        return Success(None)

    store.write(sys.argv[2], hold).unwrap()


if __name__ == "__main__":
    main()
