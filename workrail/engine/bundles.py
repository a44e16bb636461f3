"""Export and import as engine use cases: a session (by id, unique id prefix, or any of its
state tokens) out as a bundle, a bundle in as a new session with fresh tokens.

Bundle failures keep their own closed set of codes (`BUNDLE_*`, `EXPORT_*`, `IMPORT_*`):
whoever holds a bad bundle needs to know which check failed and where.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from returns.result import Failure, Result, Success

from workrail.bundle.errors import BundleError
from workrail.bundle.export import bundle_bytes, bundle_id_of, export_session, exported_at_of
from workrail.bundle.import_ import ImportResult, already_here, import_validated
from workrail.bundle.import_ import read_bundle_file as read_bundle_file
from workrail.bundle.models import Bundle
from workrail.bundle.validate import ValidatedBundle, validate_bytes
from workrail.core.ids import is_session_id
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError
from workrail.engine.imported import Engine, tokens_for_import
from workrail.engine.sessions import resolve_id


@dataclass(frozen=True)
class Exported:
    bundle: Bundle
    data: bytes
    """The bundle file's bytes."""

    def summary_json(self) -> dict[str, Any]:
        session = self.bundle.session
        out: dict[str, Any] = {
            "sessionId": session.sessionId,
            "bundleId": self.bundle.bundleId,
            "eventCount": len(session.events),
            "snapshotCount": len(session.snapshots),
            "pinnedWorkflowCount": len(session.pinnedWorkflows),
            "bytes": len(self.data),
            "complete": self.bundle.salvage is None,
        }
        if self.bundle.salvage is not None:
            out["salvage"] = self.bundle.salvage.to_json()
        return out


def export(
    deps: EngineDeps, session_ref: str, *, app_version: str
) -> Result[Exported, BundleError | EngineError]:
    """`session_ref`: a session id, a unique start of one, or a state token."""
    if "." in session_ref:  # tokens carry dots, session ids never do
        parsed = deps.codec.parse_state(session_ref)
        if isinstance(parsed, Failure):
            err = parsed.failure()
            return Failure(
                EngineError(err.code, err.message, details={"suggestion": err.suggestion})
            )
        session_id = parsed.unwrap().session_id
    elif is_session_id(session_ref):
        session_id = session_ref  # export_session says what is wrong with it, if anything
    else:
        resolved = resolve_id(deps, session_ref)
        if isinstance(resolved, Failure):
            return Failure(resolved.failure())
        session_id = resolved.unwrap()
    exported = export_session(
        deps,
        session_id,
        bundle_id=bundle_id_of(deps.entropy(16)),
        exported_at=exported_at_of(deps.clock()),
        app_version=app_version,
    )
    if isinstance(exported, Failure):
        return Failure(exported.failure())
    bundle = exported.unwrap()
    return Success(Exported(bundle, bundle_bytes(bundle)))


@dataclass(frozen=True)
class Imported:
    result: ImportResult
    tokens: dict[str, Any]
    """`{sessionId, renamed, runs: [...]}` with fresh tokens per run (engine.imported)."""


def validate_bundle(raw: bytes) -> Result[ValidatedBundle, BundleError]:
    """Every check an import makes, on a bundle file's bytes; pure, so a shell can reject a
    bad bundle before it opens a store (a brand-new one would get a keyring)."""
    return validate_bytes(raw)


def held_as(deps: EngineDeps, validated: ValidatedBundle) -> Result[str | None, BundleError]:
    """The id under which the store already holds exactly this bundle's session, or None."""
    return already_here(deps, validated)


def import_bytes(engine: Engine, bundle: bytes | ValidatedBundle) -> Result[Imported, BundleError]:
    """Validate everything before the store is touched (unless `bundle` already was), then
    store it as a new session and mint tokens."""
    if isinstance(bundle, bytes):
        checked = validate_bundle(bundle)
        if isinstance(checked, Failure):
            return Failure(checked.failure())
        bundle = checked.unwrap()
    deps = engine.deps
    stored = import_validated(deps, bundle, mint_session_id=lambda: deps.mint("sess"))
    if isinstance(stored, Failure):
        return Failure(stored.failure())
    result = stored.unwrap()
    return Success(Imported(result, tokens_for_import(engine, result)))
