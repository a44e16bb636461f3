"""resume_session's ranking as a table: each row is a query, the candidates and the order
they must come back in (with why they matched and how confidently)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from workrail.core.resume_rank import ResumeQuery, rank, weight, word_match
from workrail.core.summary import RunSummary, SessionSummary
from workrail.core.text import tokens

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SHA_A, SHA_B = "a" * 40, "b" * 40


def session(
    name: str,
    *,
    notes: str = "",
    title: str | None = None,
    workflow: str = "coding-task",
    status: str = "in_progress",
    age_hours: float = 1,
    branch: str | None = None,
    head: str | None = None,
    workspace: str | None = None,
    archived: bool = False,
    health: str = "healthy",
) -> SessionSummary:
    run = RunSummary(
        run_id=f"run_{name}",
        workflow_id=workflow,
        workflow_hash="sha256:" + "0" * 64,
        workflow_name=workflow.replace("-", " ").title(),
        status=status,  # type: ignore[arg-type]
        preferred_tip=f"node_{name}",
        tip_activity=3,
        pending_step_id=None if status.startswith("complete") else "build",
        pending_step_title=None,
        steps_done=1,
        steps_known=3,
        snippet=notes[:50],
    )
    corpus = " ".join(tokens(f"{title or ''} {workflow} {run.workflow_name} {notes}"))
    return SessionSummary(
        session_id=f"sess_{name}",
        runs=(run,),
        title=title,
        health=health,  # type: ignore[arg-type]
        archived=archived,
        event_count=10,
        last_activity=NOW - timedelta(hours=age_hours),
        workspace_path=workspace,
        repo_root_hash=None,
        git_branch=branch,
        git_head_sha=head,
        words=frozenset(corpus.split()),
    )


def order(query: ResumeQuery, *sessions: SessionSummary) -> list[str]:
    return [r.summary.session_id.removeprefix("sess_") for r in rank(query, sessions)]


CASES = [
    pytest.param(
        ResumeQuery(text="parser", session_id="sess_old"),
        [session("old", age_hours=900), session("p", notes="parser work")],
        ["old", "p"],
        id="an exact session id beats everything",
    ),
    pytest.param(
        ResumeQuery(text="run_b"),
        [session("a", notes="run b"), session("b", age_hours=50)],
        ["b", "a"],
        id="a run id typed in the query",
    ),
    pytest.param(
        ResumeQuery(text="login redirect bug"),
        [
            session("fuzzy", notes="fixing the logn redirect", age_hours=0.1),
            session("all", notes="the login bug: redirect loops", age_hours=30),
        ],
        ["all", "fuzzy"],
        id="every token in the notes beats a fuzzy match",
    ),
    pytest.param(
        ResumeQuery(text="refactr tokenizer"),
        [
            session("flow", workflow="tokenizer-refactor", age_hours=0.1),
            session("typo", notes="refactor of the tokenizer module", age_hours=20),
        ],
        ["flow", "typo"],
        id="workflow names are text too: both words there",
    ),
    pytest.param(
        ResumeQuery(text="refactr parsr"),
        [
            session("none", notes="unrelated", age_hours=0.1),
            session("typo", notes="refactor of the parser", age_hours=20),
        ],
        ["typo", "none"],
        id="typos still match",
    ),
    pytest.param(
        ResumeQuery(text="continue the review", git_head_sha=SHA_A),
        [
            session("sha", head=SHA_A, age_hours=0.1),
            session("text", notes="code review of the PR", age_hours=90),
        ],
        ["text", "sha"],
        id="query text outranks the passive git signals",
    ),
    pytest.param(
        ResumeQuery(git_head_sha=SHA_A, git_branch="feature/x"),
        [
            session("branch", branch="feature/x", age_hours=0.1),
            session("sha", head=SHA_A, age_hours=10),
            session("prefix", branch="feature", age_hours=0.01),
            session("other", branch="main", age_hours=0.001),
        ],
        ["sha", "branch", "prefix", "other"],
        id="head sha, then branch exact, then branch prefix, then recency",
    ),
    pytest.param(
        ResumeQuery(workspace_keys=frozenset({"/w"})),
        [
            session("newer", age_hours=0.1),
            session("done_here", workspace="/w", status="complete", age_hours=5),
            session("here", workspace="/w", age_hours=5),
        ],
        ["here", "newer"],
        id="same workspace first on a tie; finished runs left out",
    ),
    pytest.param(
        ResumeQuery(workspace_keys=frozenset({"/w"}), include_completed=True),
        [
            session("done_here", workspace="/w", status="complete", age_hours=1),
            session("here", workspace="/w", age_hours=5),
        ],
        ["here", "done_here"],
        id="in progress before complete, then last activity",
    ),
    pytest.param(
        ResumeQuery(workspace_keys=frozenset({"/w"}), same_workspace_only=True),
        [session("here", workspace="/w"), session("elsewhere", workspace="/v", age_hours=0)],
        ["here"],
        id="same workspace only",
    ),
    pytest.param(
        ResumeQuery(),
        [
            session("b", age_hours=2),
            session("a", age_hours=2),
            session("arch", archived=True, age_hours=0),
            session("bad", health="corrupt_tail", age_hours=0),
        ],
        ["a", "b"],
        id="recency, session id on a tie; archived and unhealthy left out",
    ),
    pytest.param(
        ResumeQuery(session_id="sess_arch"),
        [session("arch", archived=True), session("x")],
        ["arch", "x"],
        id="an archived session when asked for by id",
    ),
]


@pytest.mark.parametrize(("query", "candidates", "expected"), CASES)
def test_ranking(query: ResumeQuery, candidates: list[SessionSummary], expected: list[str]) -> None:
    assert order(query, *candidates) == expected


def test_why_matched_and_confidence() -> None:
    found = rank(
        ResumeQuery(text="the parser refactor", git_branch="main"),
        [
            session("all", notes="parser refactor", branch="main"),
            session("fuzzy", notes="parsers refactoring"),
            session("branch", branch="main"),
        ],
    )
    by_id = {r.summary.session_id: r for r in found}
    assert by_id["sess_all"].why == ("matched_notes", "matched_branch")
    assert by_id["sess_all"].confidence == "strong"
    assert by_id["sess_fuzzy"].why == ("matched_fuzzy",)
    assert by_id["sess_fuzzy"].confidence == "medium"
    assert by_id["sess_branch"].why == ("matched_branch",)
    assert [r.summary.session_id for r in found] == ["sess_all", "sess_fuzzy", "sess_branch"]
    assert rank(ResumeQuery(), [session("x")])[0].why == ("recency_fallback",)
    assert rank(ResumeQuery(), [session("x")])[0].confidence == "weak"


def test_short_and_low_signal_words_weigh_less() -> None:
    assert weight("the") < weight("api") < weight("parser")
    assert weight("continue") == weight("to")
    low = rank(ResumeQuery(text="continue the parser"), [session("p", notes="parser")])
    assert low[0].why == ("matched_notes",)  # 'continue' and 'the' need not be there
    fuzzy = rank(ResumeQuery(text="continue the parsr"), [session("p", notes="parser")])
    assert fuzzy[0].why == ("matched_fuzzy",)


def test_word_matching() -> None:
    have = frozenset({"tokenizer", "refactoring", "api"})
    heads = {"to": ["tokenizer"], "re": ["refactoring"], "ap": ["api"]}
    assert word_match("tokenizer", have, heads) == 1.0
    assert word_match("refactor", have, heads) == 0.8  # a prefix
    assert word_match("tokeniser", have, heads) == 0.7  # one edit
    assert word_match("apx", have, heads) == 0.0  # short words must match exactly
    assert word_match("zebra", have, heads) == 0.0


def test_one_candidate_per_run() -> None:
    base = session("two")
    second = replace(base.runs[0], run_id="run_second", status="blocked")
    both = replace(base, runs=(base.runs[0], second))
    assert [r.run.run_id for r in rank(ResumeQuery(), [both])] == ["run_second", "run_two"]
