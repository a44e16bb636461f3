"""The pieces of the summary projection that read the session index: one run's summary
(status, progress, pending step), the order of runs, the session's title and the head of
its search corpus, and the recap notes a node currently shows.

`SummaryAccumulator` (core.summary_accumulator) puts them together; what it folds event by
event (gaps, observations, the first notes line) and each run's window of notes stay there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from workrail.core.events import DomainEvent, NodeOutputAppended
from workrail.core.health import HealthKind
from workrail.core.session_index import SessionIndex
from workrail.core.summary import RunStatus, RunSummary, SessionSummary
from workrail.core.summary_facts import SessionFacts, TipState
from workrail.core.text import first_line, tokens

TITLE_KEYS: Final = (
    "goal",
    "taskDescription",
    "task",
    "prTitle",
    "ticketTitle",
    "title",
    "problem",
    "objective",
)
"""Run context keys that name what a session is about, in order of preference."""

TITLE_MAX: Final = 120
SNIPPET_MAX_BYTES: Final = 1024
CORPUS_MAX_TOKENS: Final = 4000
"""Search text kept per session, counted with repeats: whole notes, newest first, while
they fit (newest notes win when a session says more)."""

BLOCKING_GAP_CATEGORIES: Final = frozenset(
    {"user_only_dependency", "contract_violation", "capability_missing"}
)

OBSERVATION_KEYS: Final = ("repo_root_hash", "git_branch", "git_head_sha")
"""The workspace observations a summary shows."""


def sort_runs(index: SessionIndex | None, runs: list[RunSummary]) -> None:
    """Most recently active first; a later-started run wins a tie."""
    order = {run_id: n for n, run_id in enumerate(index.runs if index else ())}
    runs.sort(key=lambda r: (r.tip_activity, order[r.run_id]), reverse=True)


def session_summary(
    facts: SessionFacts,
    runs: Sequence[RunSummary],
    title: str | None,
    *,
    observations: Mapping[str, str],
    words: frozenset[str],
) -> SessionSummary:
    health: HealthKind | Literal["unreadable"] = (
        "unreadable" if facts.health is None else facts.health.kind
    )
    return SessionSummary(
        session_id=facts.session_id,
        runs=tuple(runs),
        title=title,
        health=health,
        archived=facts.lifecycle.archived,
        event_count=len(facts.events),
        last_activity=facts.last_activity,
        workspace_path=facts.lifecycle.workspace_path,
        repo_root_hash=observations.get("repo_root_hash"),
        git_branch=observations.get("git_branch"),
        git_head_sha=observations.get("git_head_sha"),
        words=words,
    )


def run_summary(
    index: SessionIndex,
    run_id: str,
    tip: str | None,
    activity: int,
    facts: SessionFacts,
    *,
    gaps: bool,
    blocking_gap: bool,
) -> RunSummary:
    """One run's summary from what the projection found: its preferred tip, that tip's
    activity score and whether unresolved critical gaps (blocking ones) remain. Its
    snippet is left empty: the newest notes come from the run's window."""
    run = index.runs[run_id]
    started = run.started.data
    workflow = facts.workflows.get(started.workflowHash)
    state = TipState("missing")
    if tip is not None:
        state = facts.tips.get(index.nodes[tip].data.snapshotRef, TipState("missing"))
    known_titles = workflow.step_titles if workflow is not None else {}
    known = len(known_titles)
    if state.kind == "complete":
        done = known
    elif workflow is not None and known:
        ids, titled = state.completed_step_ids, workflow.step_ids
        done = len(ids) if ids <= titled else len(ids & titled)
    else:
        done = len(state.completed_step_ids)
    pending = state.pending_step_id
    return RunSummary(
        run_id=run_id,
        workflow_id=started.workflowId,
        workflow_hash=started.workflowHash,
        workflow_name=(workflow.name if workflow is not None else "") or started.workflowId,
        status=_status(index, run_id, tip, state, gaps, blocking_gap),
        preferred_tip=tip,
        tip_activity=activity,
        pending_step_id=pending,
        pending_step_title=None if pending is None else known_titles.get(pending, pending),
        steps_done=done,
        steps_known=max(known, done),
        snippet="",
    )


def _status(
    index: SessionIndex,
    run_id: str,
    tip: str | None,
    state: TipState,
    gaps: bool,
    blocking_gap: bool,
) -> RunStatus:
    """Spec 70 §7: complete(-with-gaps) at the preferred tip, else blocked, else in progress."""
    if state.kind == "complete":
        return "complete_with_gaps" if gaps else "complete"
    autonomy = index.runs[run_id].preferences.get("autonomy", "guided")
    if autonomy == "full_auto_never_stop":
        return "in_progress"
    blocked_tip = tip is not None and (
        index.nodes[tip].data.nodeKind == "blocked_attempt" or state.kind == "blocked"
    )
    return "blocked" if blocked_tip or blocking_gap else "in_progress"


def current_notes(outputs: Sequence[NodeOutputAppended]) -> list[str]:
    """A node's current recap notes in output order (superseded ones left out)."""
    superseded = {o.data.supersedesOutputId for o in outputs if o.data.supersedesOutputId}
    notes: list[str] = []
    for output in outputs:
        payload = output.data.payload
        if payload.payloadKind == "notes" and output.data.outputId not in superseded:
            notes.append(payload.notesMarkdown)
    return notes


def notes_line(event: DomainEvent) -> str | None:
    """The title a notes output offers when no context names the session."""
    if isinstance(event, NodeOutputAppended) and event.data.payload.payloadKind == "notes":
        return first_line(event.data.payload.notesMarkdown, TITLE_MAX) or None
    return None


def session_title(
    index: SessionIndex | None, runs: Sequence[RunSummary], first_notes_line: str | None
) -> str | None:
    if index is not None:
        for run in runs:
            context = index.run_context(run.run_id)
            for key in TITLE_KEYS:
                value = context.get(key)
                if isinstance(value, str) and value.strip():
                    return first_line(value, TITLE_MAX) or None
    return first_notes_line


def corpus_head(title: str | None, runs: Sequence[RunSummary]) -> list[str]:
    """The tokens every corpus starts with: the title and each run's workflow id and name."""
    head: list[str] = tokens(title or "")
    for run in runs:
        head.extend(tokens(f"{run.workflow_id} {run.workflow_name}"))
    return head
