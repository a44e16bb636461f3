"""The session query's filters, written once: a `SessionFilter`, a page cursor and a
`CandidateQuery` read as SQL for either index of summaries (the files backend's SQLite
table and PostgreSQL's), told apart by a `Dialect`, and the normalisation and loose-match
predicates the in-memory backend applies in Python.

Pure: it builds statements and their arguments and executes nothing, so both indexes
answer the same filters with the same rows in the same order (newest activity first,
then session id). The dialects differ only in spelling: placeholders, table names, the
key the terms are stored under, booleans, and how a set of terms is matched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, Final

from workrail.core.summary import SessionSummary
from workrail.core.text import tokens
from workrail.store.ports import (
    QUERY_PAGE_MAX,
    CandidateQuery,
    PageCursor,
    SessionFilter,
    SummaryPage,
)

Clause = tuple[str, list[Any]]
"""A piece of SQL and the arguments of its placeholders, in order."""

PREFIX: Final = 3
"""resume_session's loose match: words sharing their first three characters."""

ROW_COLUMNS: Final = (
    "activity_us",
    "status",
    "archived",
    "healthy",
    "workflow_id",
    "workspace_path",
    "repo_root_hash",
    "git_branch",
    "git_head_sha",
    "record",
)
"""The columns of a summary's row both indexes keep (each adds its own before them)."""


def activity_us(moment: datetime | None) -> int:
    """A last-activity moment as the indexes order by it (0 for none)."""
    return 0 if moment is None else int(moment.timestamp() * 1_000_000)


def record_text(summary: SessionSummary) -> str:
    """The stored record of a summary, without its corpus (kept as terms)."""
    return json.dumps(summary.to_record(corpus=False), ensure_ascii=False, separators=(",", ":"))


def row_values(summary: SessionSummary) -> tuple[Any, ...]:
    """The values of `ROW_COLUMNS` for `summary`."""
    return (
        activity_us(summary.last_activity),
        summary.status,
        summary.archived,
        summary.is_healthy,
        summary.workflow_id,
        summary.workspace_path,
        summary.repo_root_hash,
        summary.git_branch,
        summary.git_head_sha,
        record_text(summary),
    )


def prefix_range(word: str) -> tuple[str, str]:
    """The terms that start as `word` does (its first `PREFIX` characters): lo <= t < hi."""
    return word[:PREFIX], word[: PREFIX - 1] + chr(ord(word[PREFIX - 1]) + 1)


def loosely(words: Collection[str], corpus: Collection[str]) -> bool:
    """A corpus term equal to a short query word, or sharing a longer one's prefix."""
    for word in words:
        if len(word) <= PREFIX:
            if word in corpus:
                return True
        else:
            lo, hi = prefix_range(word)
            if any(lo <= term < hi for term in corpus):
                return True
    return False


def on_branch(mine: str | None, branch: str) -> bool:
    """A session on `branch`, on a branch it prefixes, or on one that prefixes it."""
    return mine is not None and (mine.startswith(branch) or branch.startswith(mine))


def candidate_words(query: CandidateQuery) -> tuple[list[str], list[str]]:
    """The words a candidate search matches loosely (query and workflow tokens) and the
    words a session must hold all of (the query's tokens, else those)."""
    words = sorted(set(query.tokens) | set(query.workflow_tokens))
    return words, sorted(set(query.tokens)) or words


def text_words(where: SessionFilter) -> list[str]:
    """The normalised tokens a listing's text filter asks every one of."""
    return [] if where.text is None else sorted(set(tokens(where.text)))


class Dialect:
    """How one index spells the query: its placeholder, its tables (summaries, terms,
    runs), the column its terms refer to a summary by (which candidate selects return),
    and its literal for true."""

    mark: str
    tables: tuple[str, str, str]
    key: str
    true: str

    @property
    def summaries(self) -> str:
        return self.tables[0]

    @property
    def terms(self) -> str:
        return self.tables[1]

    @property
    def runs(self) -> str:
        return self.tables[2]

    def flag(self, column: str, value: bool) -> str:
        """A boolean column holding `value`."""
        raise NotImplementedError

    def statuses(self, statuses: Sequence[str]) -> Clause:
        raise NotImplementedError

    def with_all(self, words: Sequence[str]) -> Clause:
        """Rows holding every one of the sorted distinct `words`."""
        raise NotImplementedError

    def with_any(self, words: Sequence[str]) -> Clause:
        """Rows matching any of the sorted distinct `words` loosely (see `loosely`)."""
        raise NotImplementedError

    def branch_related(self, branch: str) -> Clause:
        """Rows on `branch`, on a branch it prefixes, or on one that prefixes it."""
        raise NotImplementedError

    def _in_terms(self, where: str) -> str:
        return f"{self.key} IN (SELECT {self.key} FROM {self.terms} WHERE {where})"


class _Sqlite(Dialect):
    mark, tables, key, true = "?", ("summaries", "terms", "runs"), "id", "1"

    def flag(self, column: str, value: bool) -> str:
        return f"{column} = {int(value)}"

    def statuses(self, statuses: Sequence[str]) -> Clause:
        return f"status IN ({', '.join('?' for _ in statuses)})", list(statuses)

    def with_all(self, words: Sequence[str]) -> Clause:
        """An intersection of the terms' postings."""
        postings = " INTERSECT ".join("SELECT id FROM terms WHERE term = ?" for _ in words)
        return f"id IN ({postings})", list(words)

    def with_any(self, words: Sequence[str]) -> Clause:
        clauses: list[str] = []
        args: list[Any] = []
        for word in words:
            if len(word) > PREFIX:
                clauses.append("(term >= ? AND term < ?)")
                args.extend(prefix_range(word))
            else:
                clauses.append("term = ?")
                args.append(word)
        return self._in_terms(" OR ".join(clauses)), args

    def branch_related(self, branch: str) -> Clause:
        return (
            "(git_branch = ? OR substr(git_branch, 1, length(?)) = ? OR "
            "substr(?, 1, length(git_branch)) = git_branch)",
            [branch] * 4,
        )


class _Postgres(Dialect):
    mark, key, true = "%s", "session_id", "true"
    tables = ("workrail_summaries", "workrail_summary_terms", "workrail_summary_runs")

    def flag(self, column: str, value: bool) -> str:
        return column if value else f"NOT {column}"

    def statuses(self, statuses: Sequence[str]) -> Clause:
        return "status = ANY(%s)", [list(statuses)]

    def with_all(self, words: Sequence[str]) -> Clause:
        """Each term is there once per session: the sessions holding as many as asked."""
        return (
            "session_id IN (SELECT session_id FROM workrail_summary_terms WHERE term = ANY(%s) "
            "GROUP BY session_id HAVING count(*) = %s)",
            [list(words), len(words)],
        )

    def with_any(self, words: Sequence[str]) -> Clause:
        clauses = ["term = ANY(%s)"]
        args: list[Any] = [[w for w in words if len(w) <= PREFIX]]
        for word in words:
            if len(word) > PREFIX:
                clauses.append("(term >= %s AND term < %s)")
                args.extend(prefix_range(word))
        return self._in_terms(" OR ".join(clauses)), args

    def branch_related(self, branch: str) -> Clause:
        return (
            "(git_branch = %s OR starts_with(git_branch, %s) OR starts_with(%s, git_branch))",
            [branch] * 3,
        )


SQLITE: Final[Dialect] = _Sqlite()
POSTGRES: Final[Dialect] = _Postgres()


def upsert_sql(d: Dialect, own: Sequence[str]) -> str:
    """Insert or replace a summary's row: `session_id`, the index's `own` columns, then
    `ROW_COLUMNS`."""
    columns = ("session_id", *own, *ROW_COLUMNS)
    marks = ", ".join(d.mark for _ in columns)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns[1:])
    return (
        f"INSERT INTO {d.summaries} ({', '.join(columns)}) VALUES ({marks}) "
        f"ON CONFLICT (session_id) DO UPDATE SET {updates}"
    )


def filter_sql(d: Dialect, where: SessionFilter) -> Clause:
    """The rows a listing shows, as a WHERE condition."""
    clauses = [d.true]
    args: list[Any] = []

    def add(sql: str, *more: Any) -> None:
        clauses.append(sql)
        args.extend(more)

    m = d.mark
    if where.statuses:
        sql, more = d.statuses(sorted(where.statuses))
        add(sql, *more)
    if where.workflow is not None:
        add(f"workflow_id = {m}", where.workflow)
    if where.workspace is not None:
        add(f"(workspace_path = {m} OR repo_root_hash = {m})", where.workspace, where.workspace)
    if where.branch is not None:
        add(f"git_branch = {m}", where.branch)
    if where.since is not None:
        add(f"activity_us >= {m}", activity_us(where.since))
    if where.archived != "include":
        add(d.flag("archived", where.archived == "only"))
    if where.healthy_only:
        add(d.flag("healthy", True))
    wanted = text_words(where)
    if wanted:
        sql, more = d.with_all(wanted)
        add(sql, *more)
    return " AND ".join(clauses), args


def page_limit(limit: int) -> int:
    """The page size a query answers with for a requested `limit`."""
    return max(1, min(limit, QUERY_PAGE_MAX))


def page_sql(d: Dialect, where: SessionFilter, limit: int, cursor: PageCursor | None) -> Clause:
    """One more row than a page of `limit` after `cursor` (the extra one says there is more)."""
    sql, args = filter_sql(d, where)
    m = d.mark
    if cursor is not None:
        sql += f" AND (activity_us < {m} OR (activity_us = {m} AND session_id > {m}))"
        args += [cursor.activity_us, cursor.activity_us, cursor.session_id]
    return (
        f"SELECT record, activity_us, session_id FROM {d.summaries} WHERE {sql} "
        f"ORDER BY activity_us DESC, session_id ASC LIMIT {m}",
        [*args, limit + 1],
    )


def page_of(
    rows: Sequence[Sequence[Any]], limit: int, parse: Callable[[str], SessionSummary | None]
) -> SummaryPage:
    """The page `page_sql`'s rows make: `parse` reads a record (None skips it)."""
    summaries = tuple(s for s in (parse(str(r[0])) for r in rows[:limit]) if s is not None)
    last = rows[limit - 1] if len(rows) > limit else None
    return SummaryPage(summaries, None if last is None else PageCursor(int(last[1]), str(last[2])))


def candidate_sql(d: Dialect, query: CandidateQuery) -> list[Clause]:
    """The selects whose keys together are resume_session's candidates: each signal's most
    recent matches, and the most recent sessions whatever they say."""
    base = [d.true]
    if not query.include_archived:
        base.append(d.flag("archived", False))
    if not query.include_unhealthy:
        base.append(d.flag("healthy", True))
    cond = " AND ".join(base)
    m = d.mark
    n = max(1, query.per_signal)
    select = f"SELECT {d.key} FROM {d.summaries} WHERE {cond}"
    recent = f"ORDER BY activity_us DESC, session_id LIMIT {m}"
    out: list[Clause] = []
    if query.session_id is not None:
        out.append((f"{select} AND session_id = {m}", [query.session_id]))
    if query.run_id is not None:
        out.append(
            (
                f"SELECT s.{d.key} FROM {d.summaries} s JOIN {d.runs} r "
                f"ON r.session_id = s.session_id WHERE {cond} AND r.run_id = {m}",
                [query.run_id],
            )
        )
    words, every = candidate_words(query)
    if words:
        every_sql, every_args = d.with_all(every)
        out.append((f"{select} AND {every_sql} {recent}", [*every_args, n]))
        loose, loose_args = d.with_any(words)
        out.append((f"{select} AND {loose} {recent}", [*loose_args, n]))
    if query.git_head_sha is not None:
        out.append((f"{select} AND git_head_sha = {m} {recent}", [query.git_head_sha, n]))
    if query.git_branch is not None:
        related, related_args = d.branch_related(query.git_branch)
        out.append(
            (f"{select} AND git_branch IS NOT NULL AND {related} {recent}", [*related_args, n])
        )
    if query.workspace is not None:
        out.append(
            (
                f"{select} AND (workspace_path = {m} OR repo_root_hash = {m}) {recent}",
                [query.workspace, query.workspace, n],
            )
        )
    out.append((f"{select} {recent}", [n]))
    return out
