"""Run a development script on the project's environment however it was started."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

NEEDED = ("pydantic", "returns", "mcp")
"""Dependencies whose absence means this Python is not one the project is installed in."""
_REEXECUTED = "WORKRAIL_SCRIPT_REEXECUTED"


def use_project_python(root: Path) -> None:
    """Re-run the calling script on `.venv/bin/python` when this Python lacks the project's
    dependencies (`python3 scripts/bench_engine` on a fresh checkout), making `.venv`
    first as scripts/test does. A Python that has them (a venv, another checkout run from
    this one's venv) is kept: the figures are of the interpreter that was asked for."""
    if all(importlib.util.find_spec(name) is not None for name in NEEDED):
        return
    if os.environ.get(_REEXECUTED):
        sys.exit(
            f"workrail: {sys.executable} lacks the project's dependencies; run scripts/test once."
        )
    made = subprocess.run(["bash", "-c", '. scripts/_venv.sh && ensure_venv "[dev]"'], cwd=root)
    if made.returncode != 0:
        sys.exit(made.returncode)
    python = root / ".venv" / "bin" / "python"
    print(f"workrail: running {Path(sys.argv[0]).name} on {python}", file=sys.stderr)
    sys.stderr.flush()
    os.execve(python, [str(python), *sys.argv], {**os.environ, _REEXECUTED: "1"})
