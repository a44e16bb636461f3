from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from returns.result import Failure, Success


def ok(result: Any) -> dict[str, Any]:
    assert isinstance(result, Success), result
    value: dict[str, Any] = result.unwrap()
    return value


def err(result: Any) -> Any:
    assert isinstance(result, Failure), result
    return result.failure()


def tree_digest(root: Path) -> str:
    """Digest of every file's path and bytes under `root` (lock files excluded)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != ".lock"):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def as_bytes(response: dict[str, Any]) -> bytes:
    return json.dumps(response, indent=2).encode()
