"""The summary projection, as a pure function of events, tip states and workflow facts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.store.plans import Chain, _event, new_id
from workrail.core import dedupe, summary_facts
from workrail.core.events import DomainEvent
from workrail.core.health import HEALTHY
from workrail.core.lifecycle import SessionLifecycle
from workrail.core.snapshot import StepInstance, running_snapshot
from workrail.core.summary import PROJECTION_VERSION, SessionSummary
from workrail.core.summary_accumulator import summarize
from workrail.core.summary_facts import SessionFacts, TipState, WorkflowFacts, needs, replay
from workrail.core.text import first_line, tokens

WF = WorkflowFacts("Probe Flow", {"plan": "Plan", "build": "Build", "verify": "Verify"})
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class Session:
    """A session built event by event, like the engine would write it."""

    def __init__(self) -> None:
        self.chain = Chain()
        self.events: list[DomainEvent] = list(self.chain.start().events)

    @property
    def sess(self) -> str:
        return self.chain.sess

    def add(self, kind: str, key: str, data: dict[str, Any], scope: dict[str, Any] | None) -> None:
        self.events.append(_event(self.sess, len(self.events), kind, key, data, scope))

    def advance(self) -> None:
        self.chain.next_index = len(self.events)
        self.events.extend(self.chain.advance().events)

    def notes(self, text: str) -> None:
        out = new_id("out")
        self.add(
            "node_output_appended",
            f"node_output_appended:{self.sess}:{out}",
            {
                "outputId": out,
                "outputChannel": "recap",
                "payload": {"payloadKind": "notes", "notesMarkdown": text},
            },
            {"runId": self.chain.run, "nodeId": self.chain.tip},
        )

    def context(self, context: dict[str, Any]) -> None:
        cid = new_id("evt")
        self.add(
            "context_set",
            dedupe.context_set(self.sess, self.chain.run, cid),
            {"contextId": cid, "context": context, "source": "initial"},
            {"runId": self.chain.run},
        )

    def gap(
        self, gap_id: str, category: str, *, severity: str = "critical", resolves: str | None = None
    ) -> None:
        resolution: dict[str, Any] = {"kind": "unresolved"}
        if resolves is not None:
            resolution = {"kind": "resolves", "resolvesGapId": resolves}
        self.add(
            "gap_recorded",
            f"gap_recorded:{self.sess}:{gap_id}",
            {
                "gapId": gap_id,
                "severity": severity,
                "reason": {"category": category, "detail": "d"},
                "summary": "s",
                "resolution": resolution,
            },
            {"runId": self.chain.run, "nodeId": self.chain.tip},
        )

    def autonomy(self, value: str) -> None:
        cid = new_id("evt")
        self.add(
            "preferences_changed",
            dedupe.preferences_changed(self.sess, self.chain.run, self.chain.tip, cid),
            {
                "changeId": cid,
                "source": "user",
                "delta": [{"key": "autonomy", "value": value}],
                "effective": {"autonomy": value, "riskPolicy": "conservative"},
            },
            {"runId": self.chain.run, "nodeId": self.chain.tip},
        )

    def observe(self, key: str, kind: str, value: str) -> None:
        self.add(
            "observation_recorded",
            dedupe.observation_recorded(self.sess, key),
            {"key": key, "value": {"type": kind, "value": value}, "confidence": "high"},
            None,
        )

    def summary(self, tip: TipState, lifecycle: SessionLifecycle | None = None) -> SessionSummary:
        index = replay(self.events)
        assert index is not None
        wanted = needs(index)
        return summarize(
            SessionFacts(
                session_id=self.sess,
                events=self.events,
                index=index,
                health=HEALTHY,
                last_activity=NOW,
                lifecycle=lifecycle or SessionLifecycle(),
                tips=dict.fromkeys(wanted.snapshot_refs, tip),
                workflows=dict.fromkeys(wanted.workflow_hashes, WF),
            )
        )


RUNNING = TipState("running", "build", frozenset({"plan"}))


def test_title_comes_from_context_keys_in_order_then_first_notes() -> None:
    s = Session()
    s.notes("## First notes line\nmore")
    assert s.summary(RUNNING).title == "First notes line"
    s.context({"problem": "a problem", "prTitle": "Fix the parser"})
    assert s.summary(RUNNING).title == "Fix the parser"
    s.context({"goal": "  \n  ", "taskDescription": "Describe\nthe task"})
    assert s.summary(RUNNING).title == "Describe"
    assert Session().summary(RUNNING).title is None
    assert Session().summary(RUNNING).display_title == "Probe Flow"


def test_status_follows_spec_70_section_7() -> None:
    s = Session()
    assert s.summary(RUNNING).status == "in_progress"
    assert s.summary(TipState("complete")).status == "complete"
    assert s.summary(TipState("blocked", "plan")).status == "blocked"
    s.gap("g1", "unexpected")
    assert s.summary(TipState("complete")).status == "complete_with_gaps"
    assert s.summary(RUNNING).status == "in_progress"  # not a blocking category
    s.gap("g2", "user_only_dependency")
    assert s.summary(RUNNING).status == "blocked"
    s.autonomy("full_auto_never_stop")
    assert s.summary(RUNNING).status == "in_progress"
    s.gap("g3", "unexpected", resolves="g1")
    s.gap("g4", "unexpected", resolves="g2")
    assert s.summary(TipState("complete")).status == "complete"


def test_warning_gaps_do_not_count() -> None:
    s = Session()
    s.gap("g1", "user_only_dependency", severity="warning")
    assert s.summary(RUNNING).status == "in_progress"
    assert s.summary(TipState("complete")).status == "complete"


def test_progress_pending_step_and_snippet() -> None:
    s = Session()
    s.advance()
    s.notes("x" * 3000)
    summary = s.summary(RUNNING)
    run = summary.primary
    assert run is not None
    assert (run.steps_done, run.steps_known) == (1, 3)
    assert (run.pending_step_id, run.pending_step_title) == ("build", "Build")
    assert len(run.snippet.encode()) <= 1024
    assert run.snippet.endswith("\n\n[TRUNCATED]")
    assert s.summary(TipState("complete")).primary.steps_done == 3  # type: ignore[union-attr]


def test_latest_observation_per_key_wins() -> None:
    s = Session()
    s.observe("git_branch", "short_string", "main")
    s.observe("git_head_sha", "git_sha1", "a" * 40)
    summary = s.summary(RUNNING)
    assert (summary.git_branch, summary.git_head_sha) == ("main", "a" * 40)
    lifecycle = SessionLifecycle(workspace_path="/w").archive("2026-01-01T00:00:00Z")
    summary = s.summary(RUNNING, lifecycle)
    assert summary.archived
    assert summary.workspace_path == "/w"


def test_records_round_trip_and_other_versions_are_refused() -> None:
    s = Session()
    s.context({"goal": "Ünïcode goal"})
    s.notes("notes with words")
    summary = s.summary(RUNNING)
    again = SessionSummary.from_record(summary.to_record())
    assert again == summary
    assert SessionSummary.from_record({**summary.to_record(), "v": PROJECTION_VERSION + 1}) is None
    assert {"notes", "words", "goal"} <= again.words
    assert "absent" not in again.words


def test_tip_states_and_workflow_facts_are_read_leniently() -> None:
    assert summary_facts.tip_state_of(None).kind == "missing"
    assert summary_facts.tip_state_of({"nonsense": True}).kind == "invalid"
    facts = summary_facts.workflow_facts_of(
        {
            "name": "Looping",
            "definition": {
                "steps": [
                    {"id": "a", "title": "A"},
                    {
                        "id": "loop",
                        "type": "loop",
                        "body": [{"id": "b", "title": "B"}, {"id": "c"}],
                    },
                    "garbage",
                ]
            },
        }
    )
    assert facts is not None
    assert dict(facts.step_titles) == {"a": "A", "b": "B", "c": "c"}
    assert summary_facts.workflow_facts_of({"definition": "no"}) is None


def _running(completed: list[str], pending: str | None = "next") -> dict[str, Any]:
    step = None if pending is None else StepInstance(step_id=pending, loop_path=[])
    return running_snapshot(completed, [], step).to_json()


PARENT_KEYS = ["a", "b", "loop@1::c"]
PLAIN_KEYS = ["a", "b", "c"]


@pytest.mark.parametrize(
    ("parent", "completed"),
    [
        (PLAIN_KEYS, [*PLAIN_KEYS, "d"]),  # an advance: one key more
        (PLAIN_KEYS, ["a", "d"]),  # another branch: keys dropped and added
        (PLAIN_KEYS, [*PLAIN_KEYS, "loop@2::d"]),  # the first key in a loop
        (PARENT_KEYS, [*PARENT_KEYS, "d"]),  # a loop key kept from the parent
        (PARENT_KEYS, ["a", "b", "d"]),  # the loop key dropped
        (PLAIN_KEYS, [*PLAIN_KEYS, "Bad Key"]),  # a new key is checked: invalid
        (PLAIN_KEYS, [*PLAIN_KEYS, ""]),
        (PLAIN_KEYS, ["a", "next"]),  # the pending step already completed: invalid
        ([], ["a"]),
    ],
)
def test_a_tip_state_read_beside_its_parents_equals_one_read_alone(
    parent: list[str], completed: list[str]
) -> None:
    """The parent's keys are not checked again, yet the state is the snapshot's alone."""
    like = summary_facts.tip_state_of(_running(parent))
    raw = _running(PLAIN_KEYS)  # a valid snapshot, then its keys replaced unchecked
    raw["enginePayload"]["engineState"]["completed"]["values"] = completed
    alone = summary_facts.tip_state_of(raw)
    beside = summary_facts.tip_state_of(raw, like)
    assert beside == alone
    assert beside.completed_keys == alone.completed_keys
    if alone.kind == "running":
        assert alone.completed_keys == frozenset(completed)
        assert alone.completed_step_ids == frozenset(k.rsplit("::", 1)[-1] for k in completed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fix the PARSER!", ["fix", "the", "parser"]),
        ("ﬁx ｆｕｌｌ-width", ["fix", "full-width", "full", "width"]),  # NFKC
        (
            "snake_case and-dash 123",
            ["snake_case", "snake", "case", "and-dash", "and", "dash", "123"],
        ),
        ("--verbose -x __init__ -- _", ["verbose", "x", "init"]),  # flags: the word inside
        ("src/report.py", ["src", "report", "py"]),
        ("kept\n\n[TRUNCATED]", ["kept"]),
        ("Ünïcode", ["n", "code"]),  # only [a-z0-9_-] make tokens, as the spec says
    ],
)
def test_text_is_normalised_per_spec_70_section_9(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("**Goal**: fix the *parser* in `src/x.py`", "Goal: fix the parser in src/x.py"),
        ("> see [the docs](https://example.com)", "see the docs"),
        ("- [ ] __first__ item", "first item"),
        ("snake_case and 2*3*4 stay", "snake_case and 2*3*4 stay"),
        ("\n\n## ***Plan***", "Plan"),
    ],
)
def test_titles_are_plain_text(text: str, title: str) -> None:
    assert first_line(text) == title


def test_first_line_skips_blank_lines_and_heading_marks() -> None:
    assert first_line("\n\n  ### Title here \nbody") == "Title here"
    assert first_line("y" * 200, 10) == "y" * 9 + "…"
