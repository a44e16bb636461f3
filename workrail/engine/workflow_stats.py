"""Where agents struggle in a workflow: per-step figures from the runs in the store.

For each step of a workflow: how many runs reached it, how many completed it, how often an
advance was blocked there, how long it took (median), how many iterations its loop ran,
and which `metrics_*` values agents reported. Read-only: the recent sessions of the
workflow are read through the ports, never written, and the fold over them (`fold_run`)
is pure.

Timings come from the store's append times (`SessionStore.append_times`): the log itself
records no clock. A step's time runs from the append that made it pending to the append
that completed it; a step completed in the same instant as it became pending (a session
copied in by an import or a migration, all rows at once) has no known time.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.session_index import SessionIndex
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError
from workrail.engine.sessions_view import NodeView, RunView, fill_states, project_runs
from workrail.engine.store_errors import from_store
from workrail.store.ports import AppendTime, SessionFilter, SessionLog

MAX_SESSIONS: Final = 200
"""The most recent sessions read for one workflow page (bounded work per page view)."""
METRICS_PREFIX: Final = "metrics_"
MAX_METRIC_VALUES: Final = 5


@dataclass
class StepStats:
    step_id: str
    reached: int = 0
    """Runs in which the step was pending at least once."""
    completed: int = 0
    """Runs in which the step was completed at least once."""
    blocked: int = 0
    """Blocked advances at this step, over all runs."""
    iterations: list[int] = field(default_factory=list)
    """Per run that reached it inside a loop: how many iterations it ran there."""
    seconds: list[float] = field(default_factory=list)
    """Each completion's time, where the store knows it."""

    @property
    def completion_rate(self) -> float | None:
        return self.completed / self.reached if self.reached else None

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def median_iterations(self) -> float | None:
        return statistics.median(self.iterations) if self.iterations else None


@dataclass
class MetricStats:
    key: str
    reported: int = 0
    numbers: list[float] = field(default_factory=list)
    values: dict[str, int] = field(default_factory=dict)
    """Non-numeric values and how often each was reported."""

    @property
    def median(self) -> float | None:
        return statistics.median(self.numbers) if self.numbers else None

    def common(self) -> list[tuple[str, int]]:
        ranked = sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:MAX_METRIC_VALUES]


@dataclass
class WorkflowStats:
    workflow_id: str
    runs: int = 0
    complete_runs: int = 0
    sessions_read: int = 0
    truncated: bool = False
    """True when more sessions exist than were read (the newest MAX_SESSIONS were)."""
    steps: dict[str, StepStats] = field(default_factory=dict)
    metrics: dict[str, MetricStats] = field(default_factory=dict)

    def step(self, step_id: str) -> StepStats:
        return self.steps.setdefault(step_id, StepStats(step_id))


def base_step(key: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A step instance key (`loop@2::step`) as its step id and loop frames."""
    if "::" not in key:
        return key, ()
    path, step_id = key.rsplit("::", 1)
    frames = []
    for frame in path.split("/"):
        loop, _, iteration = frame.rpartition("@")
        frames.append((loop, int(iteration) if iteration.isdigit() else 0))
    return step_id, tuple(frames)


def _time_of(times: Sequence[AppendTime], event_index: int) -> datetime | None:
    """When the append holding `event_index` was written (None when unknown)."""
    lasts = [t.last_event_index for t in times]
    at = bisect.bisect_left(lasts, event_index)
    return times[at].at if at < len(times) else None


@dataclass(frozen=True)
class RunFacts:
    """What one run contributes, copied while the store holds the log consistent."""

    run: RunView
    created_index: Mapping[str, int]
    context: Mapping[str, Any]


def _first_pending(run: RunView, node: NodeView) -> NodeView:
    """The node where this step instance first became pending: up through the blocked
    attempts that retried it."""
    while node.kind == "blocked_attempt" and node.parent in run.nodes:
        parent = run.nodes[node.parent]
        if parent.step_id != node.step_id:
            break
        node = parent
    return node


def fold_run(stats: WorkflowStats, facts: RunFacts, times: Sequence[AppendTime]) -> None:
    """Add one run's figures to `stats` (pure but for mutating the accumulator)."""
    run = facts.run
    stats.runs += 1
    if run.status == "complete":
        stats.complete_runs += 1
    reached: set[str] = set()
    completed: set[str] = set()
    iterations: dict[str, int] = {}
    for node in run.nodes.values():
        if node.step_id is None or node.kind == "checkpoint":
            continue
        step_id, frames = base_step(node.step_id)
        if node.kind == "blocked_attempt":
            stats.step(step_id).blocked += 1
        else:
            reached.add(step_id)
            if frames:
                iterations[step_id] = max(iterations.get(step_id, 0), frames[-1][1] + 1)
        onward = [
            run.nodes[c] for c in node.children if c in run.nodes and run.nodes[c].kind == "step"
        ]
        if not onward:
            continue
        completed.add(step_id)
        first = _first_pending(run, node)
        started = _time_of(times, facts.created_index.get(first.node_id, -1))
        ended = _time_of(times, min(facts.created_index.get(c.node_id, -1) for c in onward))
        if started is not None and ended is not None and ended > started:
            stats.step(step_id).seconds.append((ended - started).total_seconds())
    for step_id in reached:
        stats.step(step_id).reached += 1
    for step_id in completed:
        stats.step(step_id).completed += 1
    for step_id, count in iterations.items():
        stats.step(step_id).iterations.append(count)
    for key, value in facts.context.items():
        if not key.startswith(METRICS_PREFIX):
            continue
        metric = stats.metrics.setdefault(key, MetricStats(key))
        metric.reported += 1
        if isinstance(value, int | float) and not isinstance(value, bool):
            metric.numbers.append(float(value))
        else:
            text = str(value)[:80]
            metric.values[text] = metric.values.get(text, 0) + 1


def _runs_of(workflow_id: str, log: SessionLog) -> list[RunFacts]:
    index: SessionIndex = log.index
    found = []
    for run in project_runs(index):
        if run.workflow_id != workflow_id:
            continue
        created = {node_id: index.nodes[node_id].eventIndex for node_id in run.nodes}
        found.append(RunFacts(run, created, dict(index.run_context(run.run_id))))
    return found


def _recent_sessions(
    deps: EngineDeps, workflow_id: str
) -> Result[tuple[list[str], bool], EngineError]:
    where = SessionFilter(workflow=workflow_id, archived="include")
    ids: list[str] = []
    cursor = None
    while len(ids) < MAX_SESSIONS:
        page = deps.query.page(where, limit=min(50, MAX_SESSIONS - len(ids)), cursor=cursor)
        if isinstance(page, Failure):
            return Failure(from_store(page.failure(), "manage"))
        found = page.unwrap()
        ids.extend(s.session_id for s in found.summaries)
        cursor = found.next_cursor
        if cursor is None:
            return Success((ids, False))
    return Success((ids, True))


def workflow_stats(deps: EngineDeps, workflow_id: str) -> Result[WorkflowStats, EngineError]:
    """Per-step figures over the newest sessions that ran `workflow_id`."""
    recent = _recent_sessions(deps, workflow_id)
    if isinstance(recent, Failure):
        return Failure(recent.failure())
    session_ids, truncated = recent.unwrap()
    stats = WorkflowStats(workflow_id, truncated=truncated)
    for session_id in session_ids:
        read = deps.sessions.read(session_id, lambda log: _runs_of(workflow_id, log))
        if not isinstance(read, Success):
            continue  # an unhealthy or vanished session: its figures are left out
        runs = read.unwrap()
        fill_states(deps.snapshots, [facts.run for facts in runs])
        times = deps.sessions.append_times(session_id).value_or(())
        stats.sessions_read += 1
        for facts in runs:
            fold_run(stats, facts, times)
    return Success(stats)


def ordered_steps(stats: WorkflowStats, step_ids: Iterable[str]) -> list[StepStats]:
    """The figures of `step_ids` in that order (zeros for a step no run reached)."""
    return [stats.steps.get(step_id, StepStats(step_id)) for step_id in step_ids]
