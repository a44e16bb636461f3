from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from returns.result import Failure, Success

from workrail.engine.api import Engine


def ok(result: Any) -> dict[str, Any]:
    assert isinstance(result, Success), result
    value: dict[str, Any] = result.unwrap()
    return value


def err(result: Any) -> Any:
    assert isinstance(result, Failure), result
    return result.failure()


def engine_runs(max_examples: int) -> settings:
    """Hypothesis settings for a property that drives a real engine: reproducible
    (derandomized), and no per-example deadline, since an example is many engine calls."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def sid_of(engine: Engine, state_token: str) -> str:
    """The session id a state token names."""
    return engine.deps.codec.parse_state(state_token).unwrap().session_id


def loop_control(decision: str) -> dict[str, Any]:
    """The loop-control artifact loopctl-flow's review loop reads."""
    return {"kind": "wr.loop_control", "loopId": "review-loop", "decision": decision}


def looped(engine: Engine, response: dict[str, Any], notes: str, decision: str) -> dict[str, Any]:
    """Advance from `response` with `notes` and a loop-control `decision`; must succeed."""
    return ok(
        engine.advance(
            response["stateToken"],
            response["ackToken"],
            notes_markdown=notes,
            artifacts=[loop_control(decision)],
        )
    )


def tree_digest(root: Path) -> str:
    """Digest of every file's path and bytes under `root` (lock files excluded)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != ".lock"):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def as_bytes(response: dict[str, Any]) -> bytes:
    return json.dumps(response, indent=2).encode()
