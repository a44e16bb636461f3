"""One session at a glance, for an agent that was handed it (an MCP resource a user
@-mentions): its summary, the recap of each run (the notes left along the way to its
preferred tip, newest kept within a budget, as a rehydrate shows them) and a fresh
stateToken with the rehydrate call that picks the run up.

Read-only like resume_session: summaries come from the query port's non-writing reads
(`candidates`, never `get` or `page`, which may bring the files index up to date on disk),
the log is read without the writer lock, and tokens are minted, not stored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.budgets import REHYDRATE_PROMPT_MAX_BYTES, utf8_len
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.summary import RunSummary, SessionSummary
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError
from workrail.engine.rehydrate import recaps_up
from workrail.engine.responses import rehydrate_call
from workrail.engine.sessions import not_found, resolve_id, store_failure
from workrail.store.ports import CandidateQuery, SessionLog

RECAP_BUDGET_BYTES: Final = REHYDRATE_PROMPT_MAX_BYTES
"""Notes shown for a whole session (shared by its runs), as much as a rehydrate shows."""
RUN_BUDGET_MIN_BYTES: Final = 1024
RECENT_MAX: Final = 100
_NEVER: Final = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class RunRecap:
    run: RunSummary
    notes: tuple[str, ...]
    """The recaps on the way to the preferred tip, oldest first, the newest kept."""
    earlier_omitted: bool
    """True when older recaps did not fit the budget."""
    state_token: str | None
    """For the preferred tip of an unfinished run of a healthy session; else None."""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.run.to_json(),
            "recap": list(self.notes),
            "earlierRecapOmitted": self.earlier_omitted,
            "stateToken": self.state_token,
            "nextCall": None if self.state_token is None else rehydrate_call(self.state_token),
        }


@dataclass(frozen=True)
class SessionRecap:
    summary: SessionSummary
    runs: tuple[RunRecap, ...]
    recap_unavailable: str | None
    """Why there are no recaps (a damaged session), or None."""

    def to_json(self) -> dict[str, Any]:
        body = self.summary.to_json()
        body["runs"] = [r.to_json() for r in self.runs]
        body["recapUnavailable"] = self.recap_unavailable
        body.update(self._guidance())
        return body

    def _guidance(self) -> dict[str, Any]:
        sid, title = self.summary.session_id, self.summary.display_title
        going = next((r for r in self.runs if r.state_token is not None), None)
        if going is not None:
            step = going.run.pending_step_title or going.run.pending_step_id
            where = f" at the step “{step}”" if step else ""
            return {
                "message": f"Session {sid} (“{title}”) is {going.run.status}{where}. To "
                "continue it, send nextCall: it returns the pending step with fresh tokens.",
                "nextIntent": "rehydrate",
                "nextCall": rehydrate_call(going.state_token or ""),
            }
        if not self.summary.is_healthy:
            return {
                "message": f"Session {sid} (“{title}”) is damaged "
                f"({self.summary.health}): it can be read but not continued. "
                f"`workrail sessions show {sid}` shows what is left.",
                "nextIntent": "none",
                "nextCall": None,
            }
        return {
            "message": f"Session {sid} (“{title}”) has nothing left to do. Start new work "
            "with list_workflows and start_workflow.",
            "nextIntent": "complete",
            "nextCall": None,
        }


def _summary_of(deps: EngineDeps, session_id: str) -> Result[SessionSummary, EngineError]:
    found = deps.query.candidates(
        CandidateQuery(
            session_id=session_id, include_archived=True, include_unhealthy=True, per_signal=1
        )
    )
    if isinstance(found, Failure):
        return Failure(store_failure(found.failure()))
    mine = next((s for s in found.unwrap() if s.session_id == session_id), None)
    return Success(mine) if mine is not None else Failure(not_found(session_id))


def _notes(index: SessionIndex, tip: str, budget: int) -> tuple[tuple[str, ...], bool]:
    """Recaps up from `tip`, newest first while they fit; returned oldest first."""
    kept: list[str] = []
    used = 0
    newest_first = recaps_up(index, tip)
    for recap in newest_first:
        used += utf8_len(recap) + 2
        if used > budget:
            return tuple(reversed(kept)), True
        kept.append(recap)
    return tuple(reversed(kept)), False


def session_recap(deps: EngineDeps, session_ref: str) -> Result[SessionRecap, EngineError]:
    """`session_ref` is a session id or a unique start of one."""
    resolved = resolve_id(deps, session_ref)
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    found = _summary_of(deps, resolved.unwrap())
    if isinstance(found, Failure):
        return Failure(found.failure())
    summary = found.unwrap()
    budget = max(RUN_BUDGET_MIN_BYTES, RECAP_BUDGET_BYTES // max(1, len(summary.runs)))

    def recap(log: SessionLog) -> tuple[RunRecap, ...]:
        out: list[RunRecap] = []
        for run in summary.runs:
            # The tip as the log has it now: a token for a tip the summary has not caught
            # up with would lead the agent onto an old branch.
            try:
                tip = log.index.preferred_tip(run.run_id)
                notes, omitted = _notes(log.index, tip, budget) if tip else ((), False)
            except ProjectionError:
                tip, notes, omitted = None, (), False
            if tip is None:
                out.append(RunRecap(run, (), False, None))
                continue
            finished = tip == run.preferred_tip and run.status in ("complete", "complete_with_gaps")
            token = None
            if not finished:
                token = deps.codec.mint_state(
                    session_id=summary.session_id, node_id=tip, workflow_hash=run.workflow_hash
                )
            out.append(RunRecap(run, notes, omitted, token))
        return tuple(out)

    read = deps.sessions.read(summary.session_id, recap)
    if isinstance(read, Failure):
        err = read.failure()
        if err.health is None:
            return Failure(store_failure(err))
        # A damaged session: its summary without recaps. The log's own verdict wins over
        # the summary's: a read-only look at the index may predate damage it has not seen.
        bare = tuple(RunRecap(run, (), False, None) for run in summary.runs)
        damaged = replace(summary, health=err.health.kind)
        return Success(SessionRecap(damaged, bare, f"the session is {err.health.kind}"))
    return Success(SessionRecap(summary, read.unwrap(), None))


def recent_sessions(deps: EngineDeps, limit: int) -> Result[list[SessionSummary], EngineError]:
    """The most recently active unarchived sessions, newest first (damaged ones too)."""
    found = deps.query.candidates(
        CandidateQuery(include_unhealthy=True, per_signal=max(1, min(limit, RECENT_MAX)))
    )
    if isinstance(found, Failure):
        return Failure(store_failure(found.failure()))
    ordered = sorted(
        found.unwrap(), key=lambda s: (s.last_activity or _NEVER, s.session_id), reverse=True
    )
    return Success(list(islice(ordered, limit)))


def any_session(deps: EngineDeps) -> Result[bool, EngineError]:
    page = deps.sessions.list_ids(limit=1)
    if isinstance(page, Failure):
        return Failure(store_failure(page.failure()))
    return Success(bool(page.unwrap()))
