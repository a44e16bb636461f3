"""The session summary: what lists, search, resume and the console show of a session, as
one pure projection of its events (plus the snapshots at its tips, its pinned workflows and
its lifecycle record), and the record an index keeps of it.

Pure and versioned: an index of summaries is a disposable cache of the projection, so a
stored summary of another `PROJECTION_VERSION` is rebuilt, never trusted. The projection
itself is `summarize` (core.summary_accumulator): a fold of an accumulator over the events,
which a store keeps beside a session's index so an append folds only what is new; what it
reads beyond the events is gathered in two steps (core.summary_facts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from workrail.core.health import HealthKind

PROJECTION_VERSION: Final = 3
"""Bump whenever `summarize` (core.summary_accumulator) would answer differently for the
same input. 2: the corpus is the set of distinct tokens over whole notes; tip snapshots
are read without re-checking the collation of their completed set. 3: tokens are trimmed
of `-`/`_` and compounds add their parts (`--verbose` is found by `verbose`); titles are
plain text (no Markdown marks)."""

RunStatus = Literal["in_progress", "blocked", "complete", "complete_with_gaps"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = (
    "in_progress",
    "blocked",
    "complete",
    "complete_with_gaps",
)
STATUS_ALIASES: Final[dict[str, RunStatus]] = {
    "pending": "in_progress",
    "running": "in_progress",
    "active": "in_progress",
    "completed": "complete",
    "done": "complete",
}
"""Words people and older output used for a status (`sessions show` said `pending` for a
run whose step waits), accepted wherever a status is asked for."""


def status_word(text: str) -> RunStatus | None:
    """The run status `text` names: a status (any case, `-` or a space for `_`, as the
    console prints them) or an alias of one; None when it names none."""
    word = "_".join(text.strip().lower().replace("-", " ").replace("_", " ").split())
    for status in RUN_STATUSES:
        if status == word:
            return status
    return STATUS_ALIASES.get(word)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    workflow_id: str
    workflow_hash: str
    workflow_name: str
    status: RunStatus
    preferred_tip: str | None
    tip_activity: int
    """The preferred tip's last-activity event index (spec 70 §2 score)."""
    pending_step_id: str | None
    pending_step_title: str | None
    steps_done: int
    steps_known: int
    snippet: str
    """The newest notes on the preferred tip's path, at most 1 KiB (marker included)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "workflowId": self.workflow_id,
            "workflowHash": self.workflow_hash,
            "workflowName": self.workflow_name,
            "status": self.status,
            "preferredTipNodeId": self.preferred_tip,
            "tipActivity": self.tip_activity,
            "pendingStep": _pending_json(self.pending_step_id, self.pending_step_title),
            "progress": {"done": self.steps_done, "known": self.steps_known},
            "snippet": self.snippet,
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> RunSummary:
        pending = raw.get("pendingStep") or {}
        return RunSummary(
            run_id=raw["runId"],
            workflow_id=raw["workflowId"],
            workflow_hash=raw["workflowHash"],
            workflow_name=raw["workflowName"],
            status=raw["status"],
            preferred_tip=raw["preferredTipNodeId"],
            tip_activity=raw["tipActivity"],
            pending_step_id=pending.get("stepId"),
            pending_step_title=pending.get("title"),
            steps_done=raw["progress"]["done"],
            steps_known=raw["progress"]["known"],
            snippet=raw["snippet"],
        )


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    runs: tuple[RunSummary, ...]
    title: str | None
    health: HealthKind | Literal["unreadable"]
    archived: bool
    event_count: int
    last_activity: datetime | None
    workspace_path: str | None
    repo_root_hash: str | None
    git_branch: str | None
    git_head_sha: str | None
    words: frozenset[str] = field(repr=False, default=frozenset())
    """The search corpus: normalised tokens of the title, workflow and newest notes."""

    @property
    def corpus(self) -> str:
        """The corpus as text: its words sorted, space-separated."""
        return " ".join(sorted(self.words))

    @property
    def primary(self) -> RunSummary | None:
        """The run a person means: the most recently active one."""
        return self.runs[0] if self.runs else None

    @property
    def status(self) -> RunStatus:
        return self.primary.status if self.primary is not None else "in_progress"

    @property
    def workflow_id(self) -> str | None:
        return self.primary.workflow_id if self.primary is not None else None

    @property
    def workflow_name(self) -> str | None:
        return self.primary.workflow_name if self.primary is not None else None

    @property
    def is_healthy(self) -> bool:
        return self.health == "healthy"

    @property
    def display_title(self) -> str:
        return self.title or self.workflow_name or self.workflow_id or "(no runs)"

    def to_json(self) -> dict[str, Any]:
        """The wire form (console, `--json`), without the search corpus."""
        primary = self.primary
        return {
            "sessionId": self.session_id,
            "title": self.title,
            "status": self.status,
            "archived": self.archived,
            "health": self.health,
            "workflowId": self.workflow_id,
            "workflowName": self.workflow_name,
            "pendingStep": _pending_json(
                primary.pending_step_id if primary else None,
                primary.pending_step_title if primary else None,
            ),
            "progress": {
                "done": primary.steps_done if primary else 0,
                "known": primary.steps_known if primary else 0,
            },
            "eventCount": self.event_count,
            "lastActivity": _iso(self.last_activity),
            "workspacePath": self.workspace_path,
            "repoRootHash": self.repo_root_hash,
            "gitBranch": self.git_branch,
            "gitHeadSha": self.git_head_sha,
            "runs": [r.to_json() for r in self.runs],
        }

    def to_record(self, *, corpus: bool = True) -> dict[str, Any]:
        """`to_json` plus what an index stores to answer later (version, corpus). A store
        that keeps the corpus as terms of its own leaves it out (it costs a sort)."""
        record = {**self.to_json(), "v": PROJECTION_VERSION}
        if corpus:
            record["corpus"] = self.corpus
        return record

    @staticmethod
    def from_record(raw: Mapping[str, Any]) -> SessionSummary | None:
        """None for a record of another projection version (it must be rebuilt)."""
        if raw.get("v") != PROJECTION_VERSION:
            return None
        stamp = raw.get("lastActivity")
        return SessionSummary(
            session_id=raw["sessionId"],
            runs=tuple(RunSummary.from_json(r) for r in raw["runs"]),
            title=raw["title"],
            health=raw["health"],
            archived=raw["archived"],
            event_count=raw["eventCount"],
            last_activity=None if stamp is None else datetime.fromisoformat(stamp),
            workspace_path=raw["workspacePath"],
            repo_root_hash=raw["repoRootHash"],
            git_branch=raw["gitBranch"],
            git_head_sha=raw["gitHeadSha"],
            words=frozenset(str(raw.get("corpus", "")).split()),
        )


def _pending_json(step_id: str | None, title: str | None) -> dict[str, Any] | None:
    return None if step_id is None else {"stepId": step_id, "title": title or step_id}


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
