"""The engine facade: token strings in, JSON-ready responses or error values out.

Token parsing happens here so every use case receives verified, typed tokens. This module
is the transports' one door: `cli/`, `console/` and `mcp/` reach use cases only through
`Engine`, and the types and limits they render only through the names re-exported below
(an import-linter contract in pyproject.toml holds them to it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Result, Success

from workrail.engine.compiled import CompiledCache
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError as EngineError
from workrail.engine.errors import error as error
from workrail.tokens import StateToken, TokenError, check_advance_scope

if TYPE_CHECKING:
    from workrail.bundle.errors import BundleError as BundleError
    from workrail.bundle.errors import ErrorCode
    from workrail.bundle.validate import ValidatedBundle as ValidatedBundle
    from workrail.core.summary import SessionSummary
    from workrail.core.wording import did_you_mean as did_you_mean
    from workrail.engine import lifecycle as lifecycle_uc
    from workrail.engine import resume as resume_uc
    from workrail.engine import session_recap as recap_uc
    from workrail.engine import sessions as sessions_uc
    from workrail.engine import workflow_stats as stats_uc
    from workrail.engine.bundles import Exported as Exported
    from workrail.engine.bundles import Imported as Imported
    from workrail.engine.bundles import read_bundle_file as read_bundle_file
    from workrail.engine.bundles import validate_bundle as validate_bundle
    from workrail.engine.errors import workflow_invalid as workflow_invalid
    from workrail.engine.imported import preferred_run as preferred_run
    from workrail.engine.lifecycle import LifecycleChange as LifecycleChange
    from workrail.engine.lifecycle import PruneRequest as PruneRequest
    from workrail.engine.migrate import migrate_stores as migrate_stores
    from workrail.engine.portable import MAX_RECORD_BYTES as MAX_RECORD_BYTES
    from workrail.engine.resume import QUERY_MAX as QUERY_MAX
    from workrail.engine.resume import ResumeRequest as ResumeRequest
    from workrail.engine.session_inspect import SessionInspection as SessionInspection
    from workrail.engine.sessions import EVENTS_PAGE_MAX as EVENTS_PAGE_MAX
    from workrail.engine.sessions import ListRequest as ListRequest
    from workrail.engine.sessions import SessionList as SessionList
    from workrail.engine.sessions import decode_cursor as decode_cursor
    from workrail.engine.sessions_view import UNHEALTHY_BANNER as UNHEALTHY_BANNER
    from workrail.engine.sessions_view import NodeView as NodeView
    from workrail.engine.sessions_view import RunView as RunView
    from workrail.engine.sessions_view import SessionView as SessionView
    from workrail.engine.workflow_stats import MetricStats as MetricStats
    from workrail.engine.workflow_stats import StepStats as StepStats
    from workrail.engine.workflow_stats import WorkflowStats as WorkflowStats
    from workrail.store.ports import ArchivedFilter as ArchivedFilter
    from workrail.store.ports import Backend as Backend
    from workrail.store.ports import ChangeFeed as ChangeFeed
    from workrail.store.ports import SessionWatch as SessionWatch

    BundleErrorCode = ErrorCode

_REEXPORTED: dict[str, tuple[str, str]] = {
    "BundleError": ("workrail.bundle.errors", "BundleError"),
    "BundleErrorCode": ("workrail.bundle.errors", "ErrorCode"),
    "bundle_envelope": ("workrail.bundle.errors", "to_envelope"),
    "bundle_retry_for": ("workrail.bundle.errors", "retry_for"),
    "ValidatedBundle": ("workrail.bundle.validate", "ValidatedBundle"),
    "Exported": ("workrail.engine.bundles", "Exported"),
    "Imported": ("workrail.engine.bundles", "Imported"),
    "read_bundle_file": ("workrail.engine.bundles", "read_bundle_file"),
    "validate_bundle": ("workrail.engine.bundles", "validate_bundle"),
    "workflow_invalid": ("workrail.engine.errors", "workflow_invalid"),
    "preferred_run": ("workrail.engine.imported", "preferred_run"),
    "LifecycleChange": ("workrail.engine.lifecycle", "LifecycleChange"),
    "PruneRequest": ("workrail.engine.lifecycle", "PruneRequest"),
    "migrate_stores": ("workrail.engine.migrate", "migrate_stores"),
    "MAX_RECORD_BYTES": ("workrail.engine.portable", "MAX_RECORD_BYTES"),
    "QUERY_MAX": ("workrail.engine.resume", "QUERY_MAX"),
    "ResumeRequest": ("workrail.engine.resume", "ResumeRequest"),
    "SessionInspection": ("workrail.engine.session_inspect", "SessionInspection"),
    "EVENTS_PAGE_MAX": ("workrail.engine.sessions", "EVENTS_PAGE_MAX"),
    "ListRequest": ("workrail.engine.sessions", "ListRequest"),
    "SessionList": ("workrail.engine.sessions", "SessionList"),
    "decode_cursor": ("workrail.engine.sessions", "decode_cursor"),
    "did_you_mean": ("workrail.core.wording", "did_you_mean"),
    "UNHEALTHY_BANNER": ("workrail.engine.sessions_view", "UNHEALTHY_BANNER"),
    "NodeView": ("workrail.engine.sessions_view", "NodeView"),
    "RunView": ("workrail.engine.sessions_view", "RunView"),
    "SessionView": ("workrail.engine.sessions_view", "SessionView"),
    "MetricStats": ("workrail.engine.workflow_stats", "MetricStats"),
    "StepStats": ("workrail.engine.workflow_stats", "StepStats"),
    "WorkflowStats": ("workrail.engine.workflow_stats", "WorkflowStats"),
    "ArchivedFilter": ("workrail.store.ports", "ArchivedFilter"),
    "Backend": ("workrail.store.ports", "Backend"),
    "ChangeFeed": ("workrail.store.ports", "ChangeFeed"),
    "SessionWatch": ("workrail.store.ports", "SessionWatch"),
}
"""The types and limits the transports render, by the module that defines each: loaded
on first use (PEP 562), so a server's first call does not wait for the bundle models or
the advance machinery it has not used yet."""


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _REEXPORTED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_REEXPORTED])


Response = Result[dict[str, Any], EngineError]


def _token_error(err: TokenError) -> EngineError:
    return EngineError(code=err.code, message=err.message, details={"suggestion": err.suggestion})


def _continue_context(context: dict[str, Any] | None) -> EngineError | None:
    """continue_workflow validates `context` after the state token, for either intent."""
    if context is None:
        return None
    from workrail.engine.context import validate_context

    checked = validate_context("continue_workflow", context)
    return checked.failure() if isinstance(checked, Failure) else None


class Engine:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self._compiled = CompiledCache()

    def list_workflows(self) -> Response:
        from workrail.engine import workflows as workflows_uc

        return Success(workflows_uc.list_workflows(self.deps))

    def inspect_workflow(self, workflow_id: str, mode: str = "preview") -> Response:
        from workrail.engine import workflows as workflows_uc

        return workflows_uc.inspect_workflow(self.deps, workflow_id, mode)

    def workflow_definition(self, workflow_id: str) -> dict[str, Any] | None:
        """The loadable definition of a workflow, as its source file holds it; None when
        there is no such workflow or it does not load."""
        entry = self.deps.catalog.get(workflow_id)
        if entry is None:
            return None
        return entry.definition if entry.source_definition is None else entry.source_definition

    def start_workflow(
        self,
        workflow_id: str,
        context: dict[str, Any] | None = None,
        workspace_path: str | None = None,
    ) -> Response:
        from workrail.engine import start as start_uc

        return start_uc.start_workflow(
            self.deps, self._compiled, workflow_id, context, workspace_path
        )

    def rehydrate(self, state_token: str, context: dict[str, Any] | None = None) -> Response:
        state = self.deps.codec.parse_state(state_token)
        if isinstance(state, Failure):
            return Failure(_token_error(state.failure()))
        checked = _continue_context(context)
        if checked is not None:
            return Failure(checked)
        from workrail.engine import rehydrate as rehydrate_uc

        return rehydrate_uc.rehydrate(
            self.deps, self._compiled, state_token, state.unwrap(), context
        )

    def advance(
        self,
        state_token: str,
        ack_token: str,
        *,
        notes_markdown: str | None = None,
        artifacts: list[Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> Response:
        state = self.deps.codec.parse_state(state_token)
        if isinstance(state, Failure):
            return Failure(_token_error(state.failure()))
        ack = self.deps.codec.parse_ack(ack_token)
        if isinstance(ack, Failure):
            return Failure(_token_error(ack.failure()))
        scope = check_advance_scope(state.unwrap(), ack.unwrap())
        if isinstance(scope, Failure):
            return Failure(_token_error(scope.failure()))
        checked = _continue_context(context)
        if checked is not None:
            return Failure(checked)
        from workrail.engine import advance as advance_uc

        output = advance_uc.AgentOutput(notes_markdown, tuple(artifacts or ()))
        return advance_uc.advance(
            self.deps, self._compiled, state.unwrap(), ack.unwrap(), output, context
        )

    def continue_with(
        self,
        continue_token: str,
        *,
        advance: bool,
        notes_markdown: str | None = None,
        artifacts: list[Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> Response:
        """continue_workflow with one continueToken: advance from its node with its
        attempt, or (`advance` False) rehydrate its node. A state-only token (st1.) can
        only rehydrate. Answers follow the same protocol in their nextCall."""
        parsed = self.deps.codec.parse_continue(continue_token)
        if isinstance(parsed, Failure):
            return Failure(_token_error(parsed.failure()))
        token = parsed.unwrap()
        checked = _continue_context(context)
        if checked is not None:
            return Failure(checked)
        if not advance:
            given = continue_token if isinstance(token, StateToken) else None
            from workrail.engine import rehydrate as rehydrate_uc

            return rehydrate_uc.rehydrate(
                self.deps, self._compiled, given, token, context, "continue"
            )
        if isinstance(token, StateToken):
            return Failure(
                error(
                    "VALIDATION_ERROR",
                    "This continueToken is state-only (st1.…): it can recover the current "
                    "step, not complete it.",
                    "Send continue_workflow with this continueToken and no output to "
                    "rehydrate; then advance with the continueToken of that answer.",
                )
            )
        from workrail.engine import advance as advance_uc

        output = advance_uc.AgentOutput(notes_markdown, tuple(artifacts or ()))
        return advance_uc.advance(
            self.deps, self._compiled, token, token.ack(), output, context, "continue"
        )

    def checkpoint(self, checkpoint_token: str) -> Response:
        token = self.deps.codec.parse_checkpoint(checkpoint_token)
        if isinstance(token, Failure):
            return Failure(_token_error(token.failure()))
        from workrail.engine import checkpoint as checkpoint_uc

        return checkpoint_uc.checkpoint(self.deps, token.unwrap())

    def export_checkpoint_record(self, token_or_node: str) -> Response:
        """A portable record for the node named by a checkpoint token or a node id."""
        located = self._locate(token_or_node)
        if isinstance(located, EngineError):
            return Failure(located)
        session_id, node_id = located
        from workrail.engine import portable

        return portable.export_record(self.deps, session_id, node_id).map(
            lambda record: record.to_json()
        )

    def resume_checkpoint_record(self, raw: bytes, context: Any) -> Response:
        from workrail.engine import portable

        record = portable.parse_record(raw)
        if isinstance(record, Failure):
            return Failure(record.failure())
        return portable.resume_record(self.deps, self._compiled, record.unwrap(), context)

    # --- finding, following and tidying sessions (docs/sessions.md) -------------------

    def list_sessions(
        self, request: sessions_uc.ListRequest
    ) -> Result[sessions_uc.SessionList, EngineError]:
        """A page of session summaries, newest activity first (filters in `request`)."""
        from workrail.engine import sessions as sessions_uc

        return sessions_uc.list_sessions(self.deps, request)

    def session_summary(self, session_id: str) -> Result[SessionSummary, EngineError]:
        """One session's summary; `session_id` may be any unique start of the id."""
        from workrail.engine import sessions as sessions_uc

        return sessions_uc.get_summary(self.deps, session_id)

    def resolve_session(self, session_id: str) -> Result[str, EngineError]:
        from workrail.engine import sessions as sessions_uc

        return sessions_uc.resolve_id(self.deps, session_id)

    def events_since(
        self, session_id: str, cursor: object, limit: object = 100
    ) -> Result[sessions_uc.EventsPage, EngineError]:
        from workrail.engine import sessions as sessions_uc

        return sessions_uc.events_since(self.deps, session_id, cursor, limit)

    def watch(self, session_ids: list[str] | None = None) -> Result[ChangeFeed, EngineError]:
        from workrail.engine import sessions as sessions_uc

        return sessions_uc.watch(self.deps, session_ids)

    def archive(self, session_ids: list[str]) -> Result[lifecycle_uc.LifecycleChange, EngineError]:
        from workrail.engine import lifecycle as lifecycle_uc

        return lifecycle_uc.set_archived(self.deps, session_ids, True)

    def unarchive(
        self, session_ids: list[str]
    ) -> Result[lifecycle_uc.LifecycleChange, EngineError]:
        from workrail.engine import lifecycle as lifecycle_uc

        return lifecycle_uc.set_archived(self.deps, session_ids, False)

    def delete_sessions(
        self, session_ids: list[str]
    ) -> Result[lifecycle_uc.LifecycleChange, EngineError]:
        from workrail.engine import lifecycle as lifecycle_uc

        return lifecycle_uc.delete_sessions(self.deps, session_ids)

    def prune(
        self, request: lifecycle_uc.PruneRequest
    ) -> Result[lifecycle_uc.PruneReport, EngineError]:
        from workrail.engine import lifecycle as lifecycle_uc

        return lifecycle_uc.prune(self.deps, request)

    def resume_session(
        self, request: resume_uc.ResumeRequest
    ) -> Result[resume_uc.ResumeResult, EngineError]:
        """Up to five runs the user may mean, best first, each with a fresh stateToken."""
        from workrail.engine import resume as resume_uc

        return resume_uc.resume(self.deps, request)

    def session_recap(self, session_ref: str) -> Result[recap_uc.SessionRecap, EngineError]:
        """One session's summary, each run's recap and a rehydrate call; writes no
        session (only, on files, the index rows this process's own appends left pending)."""
        from workrail.engine import session_recap as recap_uc

        return recap_uc.session_recap(self.deps, session_ref)

    def recent_sessions(self, limit: int = 20) -> Result[list[SessionSummary], EngineError]:
        """The most recently active unarchived sessions, newest first; writes no session
        (only, on files, the index rows this process's own appends left pending)."""
        from workrail.engine import session_recap as recap_uc

        return recap_uc.recent_sessions(self.deps, limit)

    def workflow_stats(self, workflow_id: str) -> Result[stats_uc.WorkflowStats, EngineError]:
        """Per-step figures (reached, completed, blocked, time, iterations, metrics) over
        the newest runs of `workflow_id` in the store; writes no session."""
        from workrail.engine import workflow_stats as stats_uc

        return stats_uc.workflow_stats(self.deps, workflow_id)

    def any_session(self) -> Result[bool, EngineError]:
        from workrail.engine import session_recap as recap_uc

        return recap_uc.any_session(self.deps)

    def session_view(self, session_id: str) -> SessionView:
        """One session's run DAG, read-only; an unhealthy one shows its validated prefix."""
        from workrail.engine.sessions_view import load_session

        return load_session(self.deps, session_id)

    def inspect_session(
        self, session_id: str, node_id: str | None = None, *, all_states: bool = True
    ) -> SessionInspection:
        """One session with its events and, given `node_id`, that node's detail; never
        writes. `all_states=False` reads the tips' states only."""
        from workrail.engine.session_inspect import inspect_session

        return inspect_session(
            self.deps, session_id, node_id, all_states=all_states, compiled=self._compiled
        )

    # --- bundles (docs/bundles.md): one clock and one entropy source, the engine's ---

    def export_session(
        self, session_ref: str, *, app_version: str
    ) -> Result[Exported, BundleError | EngineError]:
        from workrail.engine import bundles as bundles_uc

        return bundles_uc.export(self.deps, session_ref, app_version=app_version)

    def bundle_held_as(self, bundle: ValidatedBundle) -> Result[str | None, BundleError]:
        """The id under which this store already holds exactly `bundle`'s session, or None
        (an import again would only make a copy under a new id)."""
        from workrail.engine import bundles as bundles_uc

        return bundles_uc.held_as(self.deps, bundle)

    def import_session(self, bundle: bytes | ValidatedBundle) -> Result[Imported, BundleError]:
        """A bundle (its file's bytes, or one `validate_bundle` passed) in as a new
        session, with fresh tokens for each run."""
        from workrail.engine import bundles as bundles_uc

        return bundles_uc.import_bytes(self, bundle)

    def _locate(self, token_or_node: str) -> tuple[str, str] | EngineError:
        if not token_or_node.startswith("node_"):
            token = self.deps.codec.parse_checkpoint(token_or_node)
            if isinstance(token, Failure):
                return _token_error(token.failure())
            return token.unwrap().session_id, token.unwrap().node_id
        from workrail.engine.sessions_view import all_session_ids

        for session_id in all_session_ids(self.deps.sessions):
            found = self.deps.sessions.read(
                session_id, lambda log: token_or_node in log.index.nodes
            )
            if isinstance(found, Success) and found.unwrap():
                return session_id, token_or_node
        return error(
            "TOKEN_UNKNOWN_NODE",
            f"No session holds node {token_or_node}.",
            "Pass a checkpointToken or a node id from `workrail sessions show`.",
        )
