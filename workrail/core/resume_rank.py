"""Ranking sessions for resume_session: which run did the user mean, without a token?

Pure: summaries in (with their search corpus), ranked candidates out. One candidate per
run, at its preferred tip. Best first:

1. the exact session or run id (given as a field, or typed in the query);
2. every query token in the session's title and notes (low-signal words such as "the" or
   "continue" aside, unless the query has nothing else);
3. a fuzzy match of the query tokens (weighted: short and low-signal words weigh less;
   a token matches another exactly, as a prefix, or one or two edits away);
4. query tokens in the workflow id or name;
5. the same git head sha; 6. the same branch (exact, then prefix either way);
7. recency.

So the query's text outranks the passive git signals. Ties go to the same workspace, then
runs in progress before finished ones, then the latest activity, then the session id.
Text is normalised per spec 70 §9 (NFKC, lowercase, `[a-z0-9_-]+` tokens). This order
deliberately replaces spec 70 §9's (git first), as the issue asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from workrail.core.summary import RunSummary, SessionSummary
from workrail.core.text import tokens

WhyMatched = Literal[
    "matched_session_id",
    "matched_run_id",
    "matched_notes",
    "matched_fuzzy",
    "matched_workflow_id",
    "matched_head_sha",
    "matched_branch",
    "matched_workspace",
    "recency_fallback",
]
WHY_MATCHED: Final[tuple[WhyMatched, ...]] = get_args(WhyMatched)
Confidence = Literal["strong", "medium", "weak"]

MAX_CANDIDATES: Final = 5
FUZZY_THRESHOLD: Final = 0.5

LOW_SIGNAL: Final = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "continue", "do",
        "for", "from", "get", "go", "has", "have", "i", "in", "is", "it", "its", "let",
        "lets", "me", "my", "of", "on", "or", "our", "please", "resume", "so", "that",
        "the", "this", "to", "was", "we", "were", "what", "where", "with", "work",
        "working", "you", "your", "session", "task", "back", "again", "pick", "up",
        "earlier", "last", "previous", "yesterday", "today", "left", "off",
    }
)  # fmt: skip
"""Words a user says around what they mean ("let's continue the work on …")."""


@dataclass(frozen=True)
class ResumeQuery:
    text: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    workspace_keys: frozenset[str] = frozenset()
    """The workspace path and its repository's root hash, when known."""
    git_branch: str | None = None
    git_head_sha: str | None = None
    same_workspace_only: bool = False
    include_completed: bool = False

    @property
    def words(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for word in tokens(self.text or ""):
            seen.setdefault(word, None)
        return tuple(seen)


@dataclass(frozen=True)
class Ranked:
    summary: SessionSummary
    run: RunSummary
    why: tuple[WhyMatched, ...]
    confidence: Confidence
    key: tuple[float | int | str, ...]


LOW_WEIGHT: Final = 0.2
"""The weight of a word that says nothing about which session (low-signal, ≤ 2 letters)."""


def weight(word: str) -> float:
    if word in LOW_SIGNAL or len(word) <= 2:
        return LOW_WEIGHT
    if len(word) == 3:
        return 0.6
    return 1.0


def _edits_within(a: str, b: str, limit: int) -> bool:
    """Levenshtein distance of `a` and `b` is at most `limit` (banded, early exit)."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        low = i
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            low = min(low, current[j])
        if low > limit:
            return False
        previous = current
    return previous[-1] <= limit


def word_match(word: str, have: frozenset[str], by_head: dict[str, list[str]]) -> float:
    """How well `word` is found among the candidate's tokens: 1 exact, 0.8 as a prefix
    either way, 0.7 within one edit (two for long words), else 0."""
    if word in have:
        return 1.0
    if len(word) < 4:
        return 0.0
    best = 0.0
    for other in by_head.get(word[:2], ()):
        if len(other) >= 4 and (other.startswith(word) or word.startswith(other)):
            return 0.8
        if best < 0.7 and _edits_within(word, other, 2 if len(word) >= 8 else 1):
            best = 0.7
    return best


def _by_head(have: Iterable[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for word in have:
        if len(word) >= 3:
            grouped.setdefault(word[:2], []).append(word)
    return grouped


def _branch_match(wanted: str | None, have: str | None) -> int:
    if not wanted or not have:
        return 0
    if wanted == have:
        return 2
    return 1 if wanted.startswith(have) or have.startswith(wanted) else 0


def rank(query: ResumeQuery, summaries: Sequence[SessionSummary]) -> list[Ranked]:
    """Every eligible run of `summaries`, best first (callers keep MAX_CANDIDATES)."""
    words = query.words
    asked = _Asked(
        query,
        words,
        total=sum(weight(w) for w in words),
        meaningful=any(weight(w) == 1.0 for w in words),
    )
    out: list[Ranked] = []
    for summary in summaries:
        if not summary.is_healthy:
            continue
        heads = _by_head(summary.words) if words else {}
        workspace = bool(
            query.workspace_keys
            and ({summary.workspace_path, summary.repo_root_hash} & query.workspace_keys)
        )
        if query.same_workspace_only and not workspace:
            continue
        for run in summary.runs:
            ranked = _rank_run(asked, summary, run, heads, workspace)
            if ranked is not None:
                out.append(ranked)
    out.sort(key=lambda r: (tuple(-_num(k) for k in r.key), r.summary.session_id, r.run.run_id))
    return out


@dataclass(frozen=True)
class _Asked:
    """The query with what every candidate is measured against computed once."""

    query: ResumeQuery
    words: tuple[str, ...]
    total: float
    meaningful: bool
    """Some query word carries full weight (not low-signal, longer than three)."""


@dataclass(frozen=True)
class _Signals:
    """What one run matched, strongest first (the order of `why` and of the sort key)."""

    by_session: bool
    by_run: bool
    every: bool
    fuzzy: float
    by_workflow: bool
    by_head: bool
    branch: int
    workspace: bool
    finished: bool

    @property
    def exact(self) -> bool:
        return self.by_session or self.by_run

    @property
    def fuzzy_hit(self) -> bool:
        return self.fuzzy >= FUZZY_THRESHOLD


def _rank_run(
    asked: _Asked,
    summary: SessionSummary,
    run: RunSummary,
    heads: dict[str, list[str]],
    workspace: bool,
) -> Ranked | None:
    """`run` as a candidate, or None when it is not one (no tip; finished or archived
    without being named)."""
    query, words = asked.query, asked.words
    if run.preferred_tip is None:
        return None
    by_session = summary.session_id in (query.session_id, *words)
    by_run = run.run_id in (query.run_id, *words)
    finished = run.status in ("complete", "complete_with_gaps")
    hidden = (finished and not query.include_completed) or summary.archived
    if hidden and not (by_session or by_run):
        return None
    text_words = [w for w in words if w not in (summary.session_id, run.run_id)]
    every, fuzzy = _text_match(text_words, asked.total, summary.words, heads)
    flow = frozenset(tokens(f"{run.workflow_id} {run.workflow_name}"))
    signals = _Signals(
        by_session=by_session,
        by_run=by_run,
        every=every,
        fuzzy=fuzzy,
        by_workflow=any(w in flow for w in text_words if weight(w) > 0.2),
        by_head=bool(query.git_head_sha) and query.git_head_sha == summary.git_head_sha,
        branch=_branch_match(query.git_branch, summary.git_branch),
        workspace=workspace,
        finished=finished,
    )
    activity = summary.last_activity.timestamp() if summary.last_activity else 0.0
    return Ranked(summary, run, _why(signals), _confidence(signals, asked), _key(signals, activity))


def _text_match(
    text_words: list[str], total: float, corpus: frozenset[str], heads: dict[str, list[str]]
) -> tuple[bool, float]:
    """Whether every needed word is in the notes, and the weighted fuzzy score."""
    # Words said around the point ("continue the …") need not be in the notes.
    needed = [w for w in text_words if w not in LOW_SIGNAL] or text_words
    every = bool(needed) and all(w in corpus for w in needed)
    fuzzy = 0.0
    if text_words and total:
        fuzzy = sum(weight(w) * word_match(w, corpus, heads) for w in text_words) / sum(
            weight(w) for w in text_words
        )
    return every, fuzzy


def _why(signals: _Signals) -> tuple[WhyMatched, ...]:
    hits: tuple[tuple[object, WhyMatched], ...] = (
        (signals.by_session, "matched_session_id"),
        (signals.by_run, "matched_run_id"),
        (signals.every, "matched_notes"),
        (not signals.every and signals.fuzzy_hit, "matched_fuzzy"),
        (signals.by_workflow, "matched_workflow_id"),
        (signals.by_head, "matched_head_sha"),
        (signals.branch, "matched_branch"),
        (signals.workspace, "matched_workspace"),
    )
    why = [name for hit, name in hits if hit]
    if not why or why == ["matched_workspace"]:
        why.append("recency_fallback")
    return tuple(why)


def _confidence(signals: _Signals, asked: _Asked) -> Confidence:
    named = signals.exact or (signals.every and asked.meaningful)
    if named or (signals.by_head and not asked.words):
        return "strong"
    near = signals.every or signals.fuzzy_hit or signals.by_workflow
    if near or signals.by_head or signals.branch == 2:
        return "medium"
    return "weak"


def _key(signals: _Signals, activity: float) -> tuple[float | int | str, ...]:
    return (
        int(signals.exact),
        int(signals.every),
        round(signals.fuzzy, 1) if signals.fuzzy_hit else 0.0,
        int(signals.by_workflow),
        int(signals.by_head),
        signals.branch,
        int(signals.workspace),
        int(not signals.finished),
        activity,
    )


def _num(value: float | int | str) -> float:
    return float(value) if not isinstance(value, str) else 0.0
