"""Fresh tokens for an imported session.

Bundles never carry tokens (they are bound to the exporter's keyring), so after an import
the agent needs new ones for each run's preferred tip. A state token is minted for the tip,
then rehydrate — the ordinary read-only recovery path — mints the ack and checkpoint tokens
and renders the pending step, so an imported run continues exactly as a rehydrated one does.
"""

from __future__ import annotations

from typing import Any, Protocol

from returns.result import Failure, Result

from workrail.bundle.import_ import ImportResult
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError


class Engine(Protocol):
    """What minting tokens for an import needs of the engine (kept a protocol so the
    engine facade can call this module without a cycle)."""

    @property
    def deps(self) -> EngineDeps: ...

    def rehydrate(
        self, state_token: str, context: dict[str, Any] | None = None
    ) -> Result[dict[str, Any], EngineError]: ...


_FROM_REHYDRATE = ("ackToken", "checkpointToken", "continueToken")


def tokens_for_import(engine: Engine, result: ImportResult) -> dict[str, Any]:
    """`{sessionId, renamed, runs: [{runId, nodeId, stateToken, ackToken?, checkpointToken?,
    isComplete, pending, nextIntent, nextCall}]}`; a run whose tip cannot be rehydrated
    carries `error` (the envelope) instead of the step, so one bad run hides no others."""
    runs: list[dict[str, Any]] = []
    for run in result.runs:
        tip = run.preferred_tip_node_id
        if tip is None:
            continue
        state_token = engine.deps.codec.mint_state(
            session_id=result.session_id, node_id=tip, workflow_hash=run.workflow_hash
        )
        entry: dict[str, Any] = {"runId": run.run_id, "nodeId": tip, "stateToken": state_token}
        rehydrated = engine.rehydrate(state_token)
        if isinstance(rehydrated, Failure):
            entry["error"] = rehydrated.failure().to_envelope()
            runs.append(entry)
            continue
        body = rehydrated.unwrap()
        entry.update({key: body[key] for key in _FROM_REHYDRATE if key in body})
        entry.update(
            isComplete=body["isComplete"],
            pending=body["pending"],
            nextIntent=body["nextIntent"],
            nextCall=body["nextCall"],
        )
        runs.append(entry)
    return {"sessionId": result.session_id, "renamed": result.renamed, "runs": runs}


def preferred_run(tokens: dict[str, Any]) -> dict[str, Any] | None:
    """The run an agent should continue: the first unfinished one, else the first at all."""
    runs: list[dict[str, Any]] = [r for r in tokens["runs"] if "error" not in r]
    for run in runs:
        if not run["isComplete"]:
            return run
    return runs[0] if runs else None
