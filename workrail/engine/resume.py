"""resume_session: find the run the user means to continue when the agent has no token,
and hand back a fresh stateToken for its preferred tip with a ready rehydrate call.

Read-only and idempotent: it reads summaries (never bringing the index up to date on
disk), runs git read-only in the workspace, and mints tokens, which are not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.resume_rank import (
    LOW_WEIGHT,
    MAX_CANDIDATES,
    Ranked,
    ResumeQuery,
    rank,
    weight,
)
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError
from workrail.engine.responses import rehydrate_call
from workrail.engine.sessions import store_failure, validation
from workrail.engine.workspace import WorkspaceFacts
from workrail.store.ports import CandidateQuery

QUERY_MAX: Final = 256


@dataclass(frozen=True)
class ResumeRequest:
    query: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    workspace_path: str | None = None
    git_branch: str | None = None
    git_head_sha: str | None = None
    same_workspace_only: bool = False
    include_completed: bool = False


@dataclass(frozen=True)
class ResumeCandidate:
    ranked: Ranked
    state_token: str

    def to_json(self) -> dict[str, Any]:
        summary, run = self.ranked.summary, self.ranked.run
        pending = (
            None
            if run.pending_step_id is None
            else {"stepId": run.pending_step_id, "title": run.pending_step_title}
        )
        return {
            "sessionId": summary.session_id,
            "runId": run.run_id,
            "workflowId": run.workflow_id,
            "workflowName": run.workflow_name,
            "title": summary.display_title,
            "status": run.status,
            "pendingStep": pending,
            "lastActivity": summary.to_json()["lastActivity"],
            "gitBranch": summary.git_branch,
            "whyMatched": list(self.ranked.why),
            "confidence": self.ranked.confidence,
            "snippet": run.snippet,
            "stateToken": self.state_token,
            "nextCall": rehydrate_call(self.state_token),
        }


_FALLBACKS: Final = frozenset({"recency_fallback", "matched_workspace"})
"""What a candidate matched when it matched nothing asked for: it is only recent."""
_START_CALL: Final = {"tool": "list_workflows", "params": {}}


@dataclass(frozen=True)
class ResumeResult:
    candidates: tuple[ResumeCandidate, ...]
    asked: bool = False
    """Whether the request named something (words, an id, a branch or a sha): then a
    candidate that is only recent is not what was asked for."""

    def to_json(self) -> dict[str, Any]:
        found = [c.to_json() for c in self.candidates]
        if not found:
            return {
                "candidates": [],
                "message": "No session to resume matches. Start a new one with list_workflows "
                "and start_workflow, or ask the user for more of the session's words.",
                "nextIntent": "start_workflow",
                "nextCall": _START_CALL,
            }
        best = found[0]
        if self.asked and set(best["whyMatched"]) <= _FALLBACKS:
            return {
                "candidates": found,
                "message": "Nothing matched what was asked: the candidates are only the most "
                "recent sessions. Ask the user whether one of them is the one (then send its "
                "nextCall); else start a new one with list_workflows and start_workflow.",
                "nextIntent": "start_workflow",
                "nextCall": _START_CALL,
            }
        ask = best["confidence"] != "strong" and len(found) > 1
        return {
            "candidates": found,
            "message": (
                "Several sessions could be the one: show the user the titles and ask which to "
                "continue, then send that candidate's nextCall."
                if ask
                else "Send the first candidate's nextCall to continue where it left off."
            ),
            "nextIntent": "ask_user_which" if ask else "rehydrate",
            "nextCall": best["nextCall"],
        }


_TEXT_FIELDS: Final = (
    ("query", "query"),
    ("session_id", "sessionId"),
    ("run_id", "runId"),
    ("workspace_path", "workspacePath"),
    ("git_branch", "gitBranch"),
    ("git_head_sha", "gitHeadSha"),
)


def _nul_field(request: ResumeRequest) -> str | None:
    """The first argument holding a NUL character: no session records one (paths, ids,
    branches and words cannot), and PostgreSQL text cannot even hold it, so it is refused
    here, the same on every backend, before any store is asked."""
    for attribute, name in _TEXT_FIELDS:
        value = getattr(request, attribute)
        if isinstance(value, str) and "\x00" in value:
            return name
    return None


def resume(deps: EngineDeps, request: ResumeRequest) -> Result[ResumeResult, EngineError]:
    bad = _bad_request(request)
    if bad is not None:
        return Failure(bad)
    facts = deps.probe.probe(request.workspace_path)
    query = _resume_query(request, facts)
    found = deps.query.candidates(_candidate_query(request, query, facts))
    if isinstance(found, Failure):
        return Failure(store_failure(found.failure()))
    ranked = rank(query, found.unwrap())[:MAX_CANDIDATES]
    candidates = []
    for item in ranked:
        tip = item.run.preferred_tip
        assert tip is not None  # rank() keeps only runs with a tip
        token = deps.codec.mint_state(
            session_id=item.summary.session_id, node_id=tip, workflow_hash=item.run.workflow_hash
        )
        candidates.append(ResumeCandidate(item, token))
    # Words that say something (not "continue my work", which asks for the latest), an
    # id, a branch or a sha the caller named.
    named = (request.session_id, request.run_id, request.git_branch, request.git_head_sha)
    asked = any(weight(w) > LOW_WEIGHT for w in query.words) or any(
        isinstance(v, str) and v.strip() for v in named
    )
    return Success(ResumeResult(tuple(candidates), asked))


def _bad_request(request: ResumeRequest) -> EngineError | None:
    """Arguments no session can match, refused before any store is asked."""
    bad = _nul_field(request)
    if bad is not None:
        return validation(
            f"{bad} contains a NUL character (\\x00), which no session can match.",
            f"Send {bad} without control characters: the user's own words, a path or an id.",
            field=bad,
        )
    text = request.query
    if text is not None and not 1 <= len(text) <= QUERY_MAX:
        return validation(
            f"query must be 1 to {QUERY_MAX} characters.",
            "Send a few of the user's own words about the work, e.g. 'the parser refactor'.",
            field="query",
        )
    return None


def _resume_query(request: ResumeRequest, facts: WorkspaceFacts | None) -> ResumeQuery:
    """What the ranking matches on: the request, with the workspace's path, repository,
    branch and head filling in what the request leaves out."""
    keys: set[str] = set()
    if facts is not None:
        keys.add(facts.path)
        if facts.repo_root_hash is not None:
            keys.add(facts.repo_root_hash)
    branch = request.git_branch or (facts.branch if facts is not None else None)
    head = request.git_head_sha or (facts.head_sha if facts is not None else None)
    return ResumeQuery(
        text=request.query,
        session_id=request.session_id,
        run_id=request.run_id,
        workspace_keys=frozenset(keys),
        git_branch=branch,
        git_head_sha=head.lower() if head else None,
        same_workspace_only=request.same_workspace_only,
        include_completed=request.include_completed,
    )


def _candidate_query(
    request: ResumeRequest, query: ResumeQuery, facts: WorkspaceFacts | None
) -> CandidateQuery:
    """The store's pre-filter for the ranking: archived sessions only when an id names
    one, the workspace by its repository when it is in one."""
    words = query.words
    workspace = None
    if facts is not None:
        workspace = facts.repo_root_hash or facts.path
    return CandidateQuery(
        tokens=words,
        session_id=request.session_id,
        run_id=request.run_id,
        workflow_tokens=words,
        git_head_sha=query.git_head_sha,
        git_branch=query.git_branch,
        workspace=workspace,
        include_archived=bool(request.session_id or request.run_id)
        or any(w.startswith(("sess_", "run_")) for w in words),
    )
