"""The session summary projection: a pure accumulator folded over a session's events once
each, beside the `SessionIndex` a store caches for the session; `summarize` is the same
fold from scratch, over a fresh accumulator.

An append costs O(new events) plus O(budget): gap, observation and title facts are folded
as events arrive, the preferred tip comes from the index in O(the touched subtree), and
each run keeps a *window* — the newest whole notes on its preferred path that fit the
corpus budget, with their token counts — that grows at the tip as the run advances. A
window is rebuilt by walking up from the tip only when the path changed under it (another
branch became preferred, notes changed on an older node, the budget changed); a fresh
accumulator builds every window so, which a property test holds the grown ones to.

Not thread-safe: the store calls it under the lock that orders the session's readers.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from workrail.core.budgets import truncate_utf8
from workrail.core.events import (
    DomainEvent,
    GapRecorded,
    NodeOutputAppended,
    ObservationRecorded,
)
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.summary import RunSummary, SessionSummary
from workrail.core.summary_facts import SessionFacts
from workrail.core.summary_runs import (
    BLOCKING_GAP_CATEGORIES,
    CORPUS_MAX_TOKENS,
    OBSERVATION_KEYS,
    SNIPPET_MAX_BYTES,
    corpus_head,
    current_notes,
    notes_line,
    run_summary,
    session_summary,
    session_title,
    sort_runs,
)
from workrail.core.text import tokens

GROWTH_WALK: Final = 64
"""How far up from a new tip a window looks for its old tip before it is rebuilt."""


@dataclass
class _Window:
    """The newest whole notes on the path root → `tip` whose tokens fit in `cap` (counted
    with repeats), oldest first; `cut` when an older note on the path did not fit."""

    tip: str
    cap: int
    seen: int
    """How many outputs of the session (`SummaryAccumulator.outputs`) it has accounted for."""
    tip_outputs: int
    """How many outputs the tip had then."""
    notes: deque[list[str]] = field(default_factory=deque)
    total: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    cut: bool = False
    covered: set[str] = field(default_factory=set)
    """The nodes walked from the tip up (to the root, or to where a note did not fit)."""
    newest: str | None = None
    """The newest note on the path, fitting or not (the run's snippet)."""

    def push(self, found: list[str]) -> None:
        self.notes.append(found)
        self.total += len(found)
        self.counts.update(found)

    def trim(self) -> None:
        """Drop the oldest notes until the rest fit."""
        while self.notes and self.total > self.cap:
            self._drop_oldest()
        if self.total > self.cap:  # only a negative cap leaves nothing that fits
            self.cut = True

    def _drop_oldest(self) -> None:
        dropped = self.notes.popleft()
        self.total -= len(dropped)
        counts = self.counts
        for word in dropped:
            left = counts[word] - 1
            if left:
                counts[word] = left
            else:
                del counts[word]
        self.cut = True


@dataclass
class SummaryAccumulator:
    """What a summary reads beyond the index, folded event by event (`catch_up`), and the
    windows of notes of the runs it last answered."""

    count: int = 0
    observations: dict[str, str] = field(default_factory=dict)
    first_notes_line: str | None = None
    resolved_gaps: set[str] = field(default_factory=set)
    open_gaps: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Unresolved critical gaps by gapId: (run id, blocking)."""
    gaps_per_run: Counter[str] = field(default_factory=Counter)
    blocking_per_run: Counter[str] = field(default_factory=Counter)
    outputs: list[tuple[str, bool]] = field(default_factory=list)
    """Every output in order: (node id, whether it supersedes another output)."""
    windows: dict[str, _Window] = field(default_factory=dict)
    last: tuple[int, frozenset[str], tuple[str, ...]] | None = None
    """The event count, corpus words and run ids of the last summary answered: a store
    whose copy is known to be that summary writes only what changed."""

    # --- folding ---------------------------------------------------------------------

    def catch_up(self, events: Sequence[DomainEvent]) -> None:
        """Fold the events this accumulator has not seen (`events` only ever grows)."""
        for event in events[self.count :]:
            self._fold(event)
        self.count = len(events)

    def _fold(self, event: DomainEvent) -> None:
        if isinstance(event, NodeOutputAppended):
            self.outputs.append((event.node_id, bool(event.data.supersedesOutputId)))
            if self.first_notes_line is None:
                self.first_notes_line = notes_line(event)
        elif isinstance(event, GapRecorded):
            self._gap(event)
        elif isinstance(event, ObservationRecorded) and event.data.key in OBSERVATION_KEYS:
            self.observations[event.data.key] = event.data.value.value

    def _gap(self, event: GapRecorded) -> None:
        data = event.data
        self._close_gap(data.gapId)
        if (
            data.resolution.kind == "unresolved"
            and data.severity == "critical"
            and data.gapId not in self.resolved_gaps
        ):
            blocking = data.reason.category in BLOCKING_GAP_CATEGORIES
            self.open_gaps[data.gapId] = (event.run_id, blocking)
            self.gaps_per_run[event.run_id] += 1
            if blocking:
                self.blocking_per_run[event.run_id] += 1
        target = data.resolution.resolvesGapId
        if data.resolution.kind == "resolves" and target:
            self.resolved_gaps.add(target)
            self._close_gap(target)

    def _close_gap(self, gap_id: str) -> None:
        closed = self.open_gaps.pop(gap_id, None)
        if closed is not None:
            run_id, blocking = closed
            self.gaps_per_run[run_id] -= 1
            if blocking:
                self.blocking_per_run[run_id] -= 1

    # --- answering -------------------------------------------------------------------

    def summarize(self, facts: SessionFacts) -> SessionSummary:
        """The summary of `facts`: the events not folded yet are folded, then each run is
        answered from the index and its window of notes."""
        self.catch_up(facts.events)
        index = facts.index
        runs, tip_of = self._runs(facts)
        title = session_title(index, runs, self.first_notes_line)
        head = corpus_head(title, runs)
        words = set(head)
        if index is not None:
            self._notes(index, runs, tip_of, CORPUS_MAX_TOKENS - len(head), words)
        self.windows = {run_id: w for run_id, w in self.windows.items() if run_id in tip_of}
        answer = session_summary(
            facts, runs, title, observations=self.observations, words=frozenset(words)
        )
        self.last = (len(facts.events), answer.words, tuple(sorted(r.run_id for r in runs)))
        return answer

    def _runs(self, facts: SessionFacts) -> tuple[list[RunSummary], dict[str, str]]:
        """Every run's summary, most recently active first, and the runs' preferred tips."""
        index = facts.index
        runs: list[RunSummary] = []
        tip_of: dict[str, str] = {}
        if index is None:
            return runs, tip_of
        for run_id, run in index.runs.items():
            scored = _preferred_tip(index, run_id)
            tip: str | None = None
            activity = run.started.eventIndex
            if scored is not None:
                tip, activity = scored
                tip_of[run_id] = tip
            gaps, blocking = self.gaps_per_run[run_id] > 0, self.blocking_per_run[run_id] > 0
            runs.append(
                run_summary(index, run_id, tip, activity, facts, gaps=gaps, blocking_gap=blocking)
            )
        sort_runs(index, runs)
        return runs, tip_of

    def _notes(
        self,
        index: SessionIndex,
        runs: list[RunSummary],
        tip_of: Mapping[str, str],
        cap: int,
        words: set[str],
    ) -> None:
        """Each run's snippet (its newest notes) into `runs`, and into `words` the tokens of
        whole notes, newest first, runs in order, while `cap` tokens (with repeats) fit."""
        room = cap
        stopped = False
        for n, summary in enumerate(runs):
            at = tip_of.get(summary.run_id)
            if at is None:
                continue
            window = self._window(index, summary.run_id, at, cap)
            if window.newest is not None:
                snippet = truncate_utf8(window.newest, SNIPPET_MAX_BYTES)
                runs[n] = replace(summary, snippet=snippet)
            if stopped:
                continue
            if window.total <= room:
                words.update(window.counts)
                room -= window.total
                stopped = window.cut
            else:  # an earlier run used some of the room: the newest notes that still fit
                for found in reversed(window.notes):
                    if len(found) > room:
                        break
                    room -= len(found)
                    words.update(found)
                stopped = True

    # --- windows ---------------------------------------------------------------------

    def _window(self, index: SessionIndex, run_id: str, tip: str, cap: int) -> _Window:
        window = self.windows.get(run_id)
        if window is None or not self._grow(index, window, tip, cap):
            window = self._build(index, tip, cap)
            self.windows[run_id] = window
        return window

    def _grow(self, index: SessionIndex, window: _Window, tip: str, cap: int) -> bool:
        """Extend `window` to the new `tip` when that only adds newer notes; False when it
        must be rebuilt instead."""
        if cap != window.cap:
            return False
        old_tip = window.tip
        moved = _moved(index, old_tip, tip)
        if moved is None:
            return False
        fresh, left = moved
        for node_id, supersedes in self.outputs[window.seen :]:
            if node_id == old_tip:
                if supersedes:
                    return False
            elif node_id in window.covered:
                return False
        added: list[str] = []
        tip_outputs = () if left else index.outputs.get(old_tip, ())
        for output in tip_outputs[window.tip_outputs :]:
            payload = output.data.payload
            if payload.payloadKind == "notes":
                added.append(payload.notesMarkdown)
        for node_id in reversed(fresh):
            added.extend(current_notes(index.outputs.get(node_id, ())))
        for text in added:
            window.push(tokens(text))
        if added:
            window.newest = added[-1]
        window.trim()
        window.covered.difference_update(left)
        window.covered.update(fresh)
        window.tip = tip
        window.seen = len(self.outputs)
        window.tip_outputs = len(index.outputs.get(tip, ()))
        return True

    def _build(self, index: SessionIndex, tip: str, cap: int) -> _Window:
        """Walk up from `tip` collecting whole notes, newest first, while they fit."""
        window = _Window(tip, cap, len(self.outputs), len(index.outputs.get(tip, ())))
        newest_first: list[list[str]] = []
        room = cap
        try:
            for node_id in index.walk_up(tip):
                window.covered.add(node_id)
                for text in reversed(current_notes(index.outputs.get(node_id, ()))):
                    if window.newest is None:
                        window.newest = text
                    found = tokens(text)
                    if len(found) > room:
                        window.cut = True
                        break
                    room -= len(found)
                    newest_first.append(found)
                if window.cut:
                    break
        except ProjectionError:
            window = _Window(tip, cap, len(self.outputs), 0)
            newest_first = []
        for found in reversed(newest_first):
            window.push(found)
        return window


def _moved(index: SessionIndex, old_tip: str, tip: str) -> tuple[list[str], list[str]] | None:
    """How the path changed from `old_tip` to `tip`: the nodes below the old tip (or the
    branch point) down to `tip`, and those of the old path below the branch point; None
    when the branch point is not near. An advance's new tip is a child of the old one,
    answered without a walk (the index never makes a cycle: a parent is created first)."""
    if tip == old_tip:
        return [], []
    node = index.nodes.get(tip)
    if node is not None and node.data.parentNodeId == old_tip:
        return [tip], []
    up = _walk_up(index, tip, GROWTH_WALK + 1)
    if old_tip in up:
        return up[: up.index(old_tip)], []
    # Another branch near the old tip (a checkpoint beside an earlier one): the window
    # still holds when the nodes it leaves carried no output at all.
    position = {node_id: n for n, node_id in enumerate(up)}
    below = _walk_up(index, old_tip, GROWTH_WALK + 1)
    fork = next((n for n, node_id in enumerate(below) if node_id in position), None)
    if fork is None:
        return None
    left = below[:fork]
    if any(index.outputs.get(node_id) for node_id in left):
        return None
    return up[: position[below[fork]]], left


def _walk_up(index: SessionIndex, node_id: str, limit: int) -> list[str]:
    """At most `limit` nodes from `node_id` up."""
    found: list[str] = []
    try:
        for current in index.walk_up(node_id):
            found.append(current)
            if len(found) >= limit:
                break
    except ProjectionError:
        return []
    return found


def _preferred_tip(index: SessionIndex, run_id: str) -> tuple[str, int] | None:
    try:
        return index.preferred_tip_scored(run_id)
    except ProjectionError:
        return None


def summarize(facts: SessionFacts) -> SessionSummary:
    """The projection from scratch, O(session): a fresh accumulator folded over every
    event. A store keeps one beside the session's index instead, so an append folds only
    the new events; both answer alike (a property test holds them to it)."""
    return SummaryAccumulator().summarize(facts)
