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


def weight(word: str) -> float:
    if word in LOW_SIGNAL or len(word) <= 2:
        return 0.2
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
    total = sum(weight(w) for w in words)
    meaningful = [w for w in words if weight(w) == 1.0]
    out: list[Ranked] = []
    for summary in summaries:
        if not summary.is_healthy:
            continue
        corpus = summary.words
        heads = _by_head(corpus) if words else {}
        workspace = bool(
            query.workspace_keys
            and ({summary.workspace_path, summary.repo_root_hash} & query.workspace_keys)
        )
        if query.same_workspace_only and not workspace:
            continue
        for run in summary.runs:
            if run.preferred_tip is None:
                continue
            why: list[WhyMatched] = []
            by_session = summary.session_id in (query.session_id, *words)
            by_run = run.run_id in (query.run_id, *words)
            exact = by_session or by_run
            if by_session:
                why.append("matched_session_id")
            if by_run:
                why.append("matched_run_id")
            finished = run.status in ("complete", "complete_with_gaps")
            if finished and not query.include_completed and not exact:
                continue
            if summary.archived and not exact:
                continue
            text_words = [w for w in words if w not in (summary.session_id, run.run_id)]
            # Words said around the point ("continue the …") need not be in the notes.
            needed = [w for w in text_words if w not in LOW_SIGNAL] or text_words
            every = bool(needed) and all(w in corpus for w in needed)
            if every:
                why.append("matched_notes")
            fuzzy = 0.0
            if text_words and total:
                fuzzy = sum(weight(w) * word_match(w, corpus, heads) for w in text_words) / sum(
                    weight(w) for w in text_words
                )
            if not every and fuzzy >= FUZZY_THRESHOLD:
                why.append("matched_fuzzy")
            flow = frozenset(tokens(f"{run.workflow_id} {run.workflow_name}"))
            by_workflow = any(w in flow for w in text_words if weight(w) > 0.2)
            if by_workflow:
                why.append("matched_workflow_id")
            by_head = bool(query.git_head_sha) and query.git_head_sha == summary.git_head_sha
            if by_head:
                why.append("matched_head_sha")
            branch = _branch_match(query.git_branch, summary.git_branch)
            if branch:
                why.append("matched_branch")
            if workspace:
                why.append("matched_workspace")
            if not why or why == ["matched_workspace"]:
                why.append("recency_fallback")
            confidence: Confidence = "weak"
            if exact or (every and meaningful) or (by_head and not words):
                confidence = "strong"
            elif every or fuzzy >= FUZZY_THRESHOLD or by_workflow or by_head or branch == 2:
                confidence = "medium"
            activity = summary.last_activity.timestamp() if summary.last_activity else 0.0
            key: tuple[float | int | str, ...] = (
                int(exact),
                int(every),
                round(fuzzy, 1) if fuzzy >= FUZZY_THRESHOLD else 0.0,
                int(by_workflow),
                int(by_head),
                branch,
                int(workspace),
                int(not finished),
                activity,
            )
            out.append(Ranked(summary, run, tuple(why), confidence, key))
    out.sort(key=lambda r: (tuple(-_num(k) for k in r.key), r.summary.session_id, r.run.run_id))
    return out


def _num(value: float | int | str) -> float:
    return float(value) if not isinstance(value, str) else 0.0
