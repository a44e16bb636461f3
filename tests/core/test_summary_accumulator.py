"""The summary kept incrementally answers exactly what the projection's definition does.

Random sessions are grown event by event — several runs, advances from any node (forks),
nodes whose edge never comes, blocked attempts, notes on any node (some superseding
others, some long enough to fill the corpus budget), context titles, gaps that resolve
each other, observations, autonomy changes — and after every step (or at random points)
the accumulator (one per session, folding only what is new, as a store keeps it) must
equal the definition read literally over the whole log (`literally`, below: every event
scanned, every path walked), and at the end a fresh accumulator folding the whole log at
once (`summarize`) must answer the same. The preferred tip is checked against spec 70 §2
computed literally.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.store.plans import WF_HASH, _event, new_id, snapshot_ref
from workrail.core import dedupe
from workrail.core import summary_runs as parts
from workrail.core.budgets import truncate_utf8
from workrail.core.events import DomainEvent, GapRecorded, ObservationRecorded
from workrail.core.health import HEALTHY
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.session_index import ProjectionError, SessionIndex
from workrail.core.summary import RunSummary, SessionSummary
from workrail.core.summary_accumulator import SummaryAccumulator, summarize
from workrail.core.summary_facts import SessionFacts, TipState, WorkflowFacts, needs
from workrail.core.text import tokens

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
WF = WorkflowFacts("Probe Flow", {"plan": "Plan", "build": "Build", "verify": "Verify"})
STATES = (
    TipState("running", "build", frozenset({"plan"})),
    TipState("blocked", "verify", frozenset({"plan", "build"})),
    TipState("complete"),
    TipState("invalid"),
    TipState("init"),
)
WORDS = ("alpha", "beta", "gamma", "fix-123", "Ünïcode", "wörds", "DONE", "the", "a_b", "x", "y ")


def tip_state(ref: str) -> TipState:
    return STATES[hashlib.sha256(ref.encode()).digest()[0] % len(STATES)]


class Grown:
    """A session log built event by event, with its index kept incrementally."""

    def __init__(self) -> None:
        self.sess = new_id("sess")
        self.events: list[DomainEvent] = []
        self.index = SessionIndex()
        self.runs: list[str] = []
        self.nodes: list[tuple[str, str]] = []  # (run, node)
        self.outputs: dict[str, list[str]] = {}  # node -> output ids
        self.gaps: list[str] = []
        self.add("session_created", dedupe.session_created(self.sess), {}, None)

    def add(self, kind: str, key: str, data: dict[str, Any], scope: dict[str, Any] | None) -> None:
        event = _event(self.sess, len(self.events), kind, key, data, scope)
        self.index.apply(event)
        self.events.append(event)

    def start(self) -> None:
        run = new_id("run")
        self.add(
            "run_started",
            dedupe.run_started(self.sess, run),
            {
                "workflowId": "probe-flow",
                "workflowHash": WF_HASH,
                "workflowSourceKind": "bundled",
                "workflowSourceRef": "(bundled)",
            },
            {"runId": run},
        )
        self.runs.append(run)
        self.node(run, None, "step")

    def node(self, run: str, parent: str | None, kind: str, *, edge: bool = True) -> None:
        node = new_id("node")
        self.add(
            "node_created",
            dedupe.node_created(self.sess, run, node),
            {
                "nodeKind": kind,
                "parentNodeId": parent,
                "workflowHash": WF_HASH,
                "snapshotRef": snapshot_ref(node),
            },
            {"runId": run, "nodeId": node},
        )
        self.nodes.append((run, node))
        if parent is not None and edge:
            self.add(
                "edge_created",
                dedupe.acked_step_edge(self.sess, run, parent, node),
                {
                    "edgeKind": "acked_step",
                    "fromNodeId": parent,
                    "toNodeId": node,
                    "cause": {"kind": "intentional_fork", "eventId": self.events[-1].eventId},
                },
                {"runId": run},
            )

    def advance(self, pick: int, kind: str, edge: bool) -> None:
        run, parent = self.nodes[pick % len(self.nodes)]
        attempt = new_id("attempt")
        self.add(
            "advance_recorded",
            dedupe.advance_recorded(self.sess, parent, attempt),
            {
                "attemptId": attempt,
                "intent": "ack_pending",
                "outcome": {"kind": "advanced", "toNodeId": "x"},
            },
            {"runId": run, "nodeId": parent},
        )
        self.node(run, parent, kind, edge=edge)

    def notes(self, pick: int, text: str, supersede: bool) -> None:
        run, node = self.nodes[pick % len(self.nodes)]
        out = new_id("out")
        data: dict[str, Any] = {
            "outputId": out,
            "outputChannel": "recap",
            "payload": {"payloadKind": "notes", "notesMarkdown": text},
        }
        earlier = self.outputs.get(node, [])
        if supersede and earlier:
            data["supersedesOutputId"] = earlier[pick % len(earlier)]
        self.outputs.setdefault(node, []).append(out)
        self.add(
            "node_output_appended",
            dedupe.node_output_appended(self.sess, out),
            data,
            {"runId": run, "nodeId": node},
        )

    def context(self, pick: int, text: str) -> None:
        run = self.runs[pick % len(self.runs)]
        key = ("goal", "taskDescription", "other", "problem")[pick % 4]
        cid = new_id("evt")
        self.add(
            "context_set",
            dedupe.context_set(self.sess, run, cid),
            {"contextId": cid, "context": {key: text}, "source": "initial"},
            {"runId": run},
        )

    def gap(self, pick: int, resolves: bool) -> None:
        run, node = self.nodes[pick % len(self.nodes)]
        reuse = self.gaps and pick % 3 == 0
        gap_id = self.gaps[pick % len(self.gaps)] if reuse else new_id("gap")
        resolution: dict[str, Any] = {"kind": "unresolved"}
        if resolves and self.gaps:
            resolution = {"kind": "resolves", "resolvesGapId": self.gaps[pick % len(self.gaps)]}
        self.gaps.append(gap_id)
        category = ("user_only_dependency", "contract_violation", "unexpected")[pick % 3]
        self.add(
            "gap_recorded",
            f"gap_recorded:{self.sess}:{new_id('g')}",
            {
                "gapId": gap_id,
                "severity": ("critical", "warning", "critical")[pick % 3],
                "reason": {"category": category, "detail": "d"},
                "summary": "s",
                "resolution": resolution,
            },
            {"runId": run, "nodeId": node},
        )

    def autonomy(self, pick: int) -> None:
        run, node = self.nodes[pick % len(self.nodes)]
        value = ("guided", "full_auto_never_stop")[pick % 2]
        cid = new_id("evt")
        self.add(
            "preferences_changed",
            dedupe.preferences_changed(self.sess, run, node, cid),
            {
                "changeId": cid,
                "source": "user",
                "delta": [{"key": "autonomy", "value": value}],
                "effective": {"autonomy": value, "riskPolicy": "conservative"},
            },
            {"runId": run, "nodeId": node},
        )

    def observe(self, pick: int) -> None:
        key = ("git_branch", "git_head_sha", "repo_root_hash")[pick % 3]
        self.add(
            "observation_recorded",
            dedupe.observation_recorded(self.sess, key) + f":{len(self.events)}",
            {
                "key": key,
                "value": {"type": "short_string", "value": f"v{pick}"},
                "confidence": "high",
            },
            None,
        )

    def facts(self) -> SessionFacts:
        wanted = needs(self.index)
        return SessionFacts(
            session_id=self.sess,
            events=self.events,
            index=self.index,
            health=HEALTHY,
            last_activity=NOW,
            lifecycle=SessionLifecycle(),
            tips={ref: tip_state(ref) for ref in wanted.snapshot_refs},
            workflows={WF_HASH: WF},
        )


def incremental(acc: SummaryAccumulator, facts: SessionFacts) -> SessionSummary:
    return acc.summarize(facts)


# --- the definition, read literally ----------------------------------------------------


def literally(facts: SessionFacts) -> SessionSummary:
    """The projection as spec 70 defines it, O(session): gaps, observations and the title
    from a scan of every event, each run's notes from a walk of its whole path."""
    index = facts.index
    assert index is not None
    gaps = unresolved_critical_gaps(facts.events)
    runs: list[RunSummary] = []
    for run_id in index.runs:
        tip = index.preferred_tip_by_scoring(run_id)
        activity = index.runs[run_id].started.eventIndex
        if tip is not None:
            activity = max(index.last_activity[n] for n in index.ancestors(tip))
        found = gaps.get(run_id, [])
        blocking = any(g.data.reason.category in parts.BLOCKING_GAP_CATEGORIES for g in found)
        summary = parts.run_summary(
            index, run_id, tip, activity, facts, gaps=bool(found), blocking_gap=blocking
        )
        notes = path_notes(index, tip) if tip is not None else []
        if notes:
            summary = replace(summary, snippet=truncate_utf8(notes[-1], parts.SNIPPET_MAX_BYTES))
        runs.append(summary)
    parts.sort_runs(index, runs)
    first = next((line for line in map(parts.notes_line, facts.events) if line), None)
    title = parts.session_title(index, runs, first)
    observations = latest_observations(facts.events)
    words = corpus(title, index, runs)
    return parts.session_summary(facts, runs, title, observations=observations, words=words)


def unresolved_critical_gaps(events: Sequence[DomainEvent]) -> dict[str, list[GapRecorded]]:
    """Spec 70 §6, per run: the latest record per gapId, minus those another resolves."""
    latest: dict[str, GapRecorded] = {}
    resolved: set[str] = set()
    for event in events:
        if isinstance(event, GapRecorded):
            latest[event.data.gapId] = event
            target = event.data.resolution.resolvesGapId
            if event.data.resolution.kind == "resolves" and target:
                resolved.add(target)
    out: dict[str, list[GapRecorded]] = {}
    for gap_id, gap in latest.items():
        data = gap.data
        open_critical = data.resolution.kind == "unresolved" and data.severity == "critical"
        if open_critical and gap_id not in resolved:
            out.setdefault(gap.run_id, []).append(gap)
    return out


def latest_observations(events: Sequence[DomainEvent]) -> dict[str, str]:
    """The value of the highest event index per shown observation key."""
    found: dict[str, tuple[int, str]] = {}
    for event in events:
        if isinstance(event, ObservationRecorded) and event.data.key in parts.OBSERVATION_KEYS:
            previous = found.get(event.data.key)
            if previous is None or previous[0] <= event.eventIndex:
                found[event.data.key] = (event.eventIndex, event.data.value.value)
    return {key: value for key, (_, value) in found.items()}


def path_notes(index: SessionIndex, tip: str) -> list[str]:
    """Current recap notes on the root → tip path, oldest first."""
    try:
        path = list(reversed(index.ancestors(tip)))
    except ProjectionError:
        return []
    return [
        note for node_id in path for note in parts.current_notes(index.outputs.get(node_id, ()))
    ]


def corpus(title: str | None, index: SessionIndex, runs: Sequence[RunSummary]) -> frozenset[str]:
    """The distinct tokens of the head and of every run's path notes — whole notes, newest
    first, runs in order — while the tokens counted stay within parts.CORPUS_MAX_TOKENS."""
    head = parts.corpus_head(title, runs)
    words = set(head)
    room = parts.CORPUS_MAX_TOKENS - len(head)
    for run in runs:
        for notes in reversed(path_notes(index, run.preferred_tip) if run.preferred_tip else []):
            found = tokens(notes)
            if len(found) > room:
                return frozenset(words)
            room -= len(found)
            words.update(found)
    return frozenset(words)


text = st.builds(
    lambda words, repeat, head: (
        ((f"# {head}\n" if head else "") + " ".join(words) * repeat)[
            :2000  # notes are at most 4 KiB
        ]
        or "—"
    ),
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=6),
    st.sampled_from([1, 1, 1, 2, 40, 700]),
    st.sampled_from(["", "Heading", "   "]),
)
op = st.tuples(
    st.sampled_from(
        [
            "advance",
            "advance",
            "advance",
            "advance",
            "notes",
            "notes",
            "notes",
            "start",
            "context",
            "gap",
            "resolve",
            "autonomy",
            "observe",
            "blocked",
            "no_edge",
            "checkpoint",
            "supersede",
            "summarize",
        ]
    ),
    st.integers(0, 1_000),
    text,
)


@settings(max_examples=600, deadline=None)
@given(st.lists(op, min_size=1, max_size=60), st.booleans())
def test_the_accumulator_answers_what_summarize_answers(
    ops: list[tuple[str, int, str]], every_step: bool
) -> None:
    s = Grown()
    s.start()
    acc = SummaryAccumulator()
    for name, pick, words in ops:
        if name == "start":
            s.start()
        elif name == "advance":
            # mostly from the newest node, as an agent advances; sometimes a fork
            s.advance(len(s.nodes) - 1 if pick % 4 else pick, "step", True)
        elif name == "blocked":
            s.advance(len(s.nodes) - 1, "blocked_attempt", True)
        elif name == "checkpoint":
            s.advance(pick, "checkpoint", True)
        elif name == "no_edge":
            s.advance(pick, "step", False)
        elif name == "notes":
            s.notes(len(s.nodes) - 1 if pick % 2 else pick, words, False)
        elif name == "supersede":
            s.notes(pick, words, True)
        elif name == "context":
            s.context(pick, words)
        elif name in ("gap", "resolve"):
            s.gap(pick, name == "resolve")
        elif name == "autonomy":
            s.autonomy(pick)
        elif name == "observe":
            s.observe(pick)
        if every_step or name == "summarize":
            facts = s.facts()
            assert incremental(acc, facts) == literally(facts)
        for run in s.runs:
            assert s.index.preferred_tip(run) == s.index.preferred_tip_by_scoring(run)
    facts = s.facts()
    answer = incremental(acc, facts)
    assert answer == literally(facts)
    assert summarize(facts) == answer


def test_a_long_linear_session_keeps_only_the_newest_notes_that_fit() -> None:
    s = Grown()
    s.start()
    acc = SummaryAccumulator()
    for i in range(1_200):
        s.notes(len(s.nodes) - 1, f"notes for step {i}", False)
        s.advance(len(s.nodes) - 1, "step", True)
        if i % 97 == 0:
            facts = s.facts()
            assert incremental(acc, facts) == summarize(facts)
    facts = s.facts()
    summary = incremental(acc, facts)
    assert summary == summarize(facts)
    words = summary.corpus.split()
    assert "1199" in words
    assert "5" not in words
    assert summary.runs[0].snippet == "notes for step 1199"


def test_checkpoints_beside_each_other_grow_the_window_instead_of_rebuilding_it() -> None:
    """Each checkpoint of the same node is a new sibling tip: the notes on the path do not
    change, so the window is kept (rebuilding it walks the whole budget of notes)."""
    s = Grown()
    s.start()
    acc = SummaryAccumulator()
    for i in range(300):
        s.notes(len(s.nodes) - 1, f"notes for step {i}", False)
        s.advance(len(s.nodes) - 1, "step", True)
    run, node = s.nodes[-1]
    facts = s.facts()
    assert incremental(acc, facts) == summarize(facts)
    window = acc.windows[run]
    for i in range(4):
        s.node(run, node, "checkpoint")
        if i == 2:  # notes on a checkpoint: the next sibling leaves them, so it rebuilds
            s.notes(len(s.nodes) - 1, "checkpoint notes", False)
        facts = s.facts()
        assert incremental(acc, facts) == summarize(facts)
        assert (acc.windows[run] is window) == (i != 3)
