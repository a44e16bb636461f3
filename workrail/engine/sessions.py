"""Finding and following sessions: ids by unique prefix, paged lists and text search over
the summary projection, one session's summary, the event cursor and the change feed.

Read-only use cases with typed results; the CLI, the MCP server and the web console only
unpack arguments and render what these return.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any, Final

from returns.result import Failure, Result, Success

from workrail.core.events import DomainEvent
from workrail.core.health import SessionHealth
from workrail.core.summary import RUN_STATUSES, RunStatus, SessionSummary, status_word
from workrail.core.wording import did_you_mean
from workrail.engine.deps import EngineDeps
from workrail.engine.errors import EngineError, error
from workrail.engine.store_errors import from_store
from workrail.store.errors import StoreError
from workrail.store.ports import (
    QUERY_PAGE_MAX,
    ArchivedFilter,
    ChangeFeed,
    PageCursor,
    SessionFilter,
    SummaryPage,
)

ID_PREFIX_RE: Final = re.compile(r"^(sess_)?[a-z2-7]{1,26}$")
AMBIGUOUS_SHOWN: Final = 20
EVENTS_PAGE_MAX: Final = 1000
DEFAULT_PAGE: Final = 50


def store_failure(err: StoreError) -> EngineError:
    """A store failure met while managing sessions, mapped like every other (one mapper)."""
    return from_store(err, "manage")


def parse_statuses(given: Sequence[str]) -> Result[frozenset[RunStatus], EngineError]:
    """Status words from a person or an agent: each must be a run status (with a guess at
    the one meant)."""
    statuses: set[RunStatus] = set()
    for status in given:
        match = status_word(status)
        if match is None:
            hint = did_you_mean(status, RUN_STATUSES)
            return Failure(
                validation(
                    f"Unknown status {status!r}.",
                    (f"Did you mean {hint!r}? " if hint else "")
                    + "Statuses are: "
                    + ", ".join(RUN_STATUSES)
                    + " (pending is in_progress, done is complete).",
                    field="status",
                    didYouMean=hint,
                )
            )
        statuses.add(match)
    return Success(frozenset(statuses))


def validation(message: str, suggestion: str, **details: Any) -> EngineError:
    return error("VALIDATION_ERROR", message, suggestion, **details)


# --- ids ---------------------------------------------------------------------------------


def resolve_id(deps: EngineDeps, text: str) -> Result[str, EngineError]:
    """The one session whose id is `text` or starts with it (`sess_` may be left out)."""
    wanted = text.strip().lower()
    if not ID_PREFIX_RE.match(wanted) or wanted == "sess_":
        return Failure(
            validation(
                f"Not a session id or id prefix: {text[:80]!r}.",
                "Session ids look like sess_ followed by 26 letters a-z and digits 2-7; "
                "`workrail sessions` lists them, and any unique start of one will do.",
            )
        )
    if not wanted.startswith("sess_"):
        wanted = "sess_" + wanted
    if len(wanted) == 31:
        found = deps.sessions.exists(wanted)
        if isinstance(found, Failure):
            return Failure(store_failure(found.failure()))
        if found.unwrap():
            return Success(wanted)
        return Failure(not_found(wanted))
    matches: list[str] = []
    after: str | None = wanted
    while len(matches) <= AMBIGUOUS_SHOWN:
        page = deps.sessions.list_ids(after=after, limit=AMBIGUOUS_SHOWN + 1)
        if isinstance(page, Failure):
            return Failure(store_failure(page.failure()))
        ids = page.unwrap()
        hits = [i for i in ids if i.startswith(wanted)]
        matches.extend(hits)
        if len(hits) < len(ids) or not ids:
            break
        after = ids[-1]
    if not matches:
        return Failure(not_found(wanted))
    if len(matches) > 1:
        shown = matches[:AMBIGUOUS_SHOWN]
        more = " (and more)" if len(matches) > AMBIGUOUS_SHOWN else ""
        return Failure(
            validation(
                f"{text!r} is the start of {len(matches)} session ids{more}; nothing was done.",
                "Give more characters of the id: " + ", ".join(shown),
                matches=shown,
            )
        )
    return Success(matches[0])


def resolve_ids(deps: EngineDeps, texts: Sequence[str]) -> Result[list[str], EngineError]:
    """Every id resolved before anything is done with any of them."""
    out: list[str] = []
    for text in texts:
        one = resolve_id(deps, text)
        if isinstance(one, Failure):
            return Failure(one.failure())
        if one.unwrap() not in out:
            out.append(one.unwrap())
    return Success(out)


def not_found(session_id: str) -> EngineError:
    return error(
        "NOT_FOUND",
        f"No session {session_id}.",
        "Run `workrail sessions --all` to list the sessions.",
    )


# --- listing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ListRequest:
    """What a person or the console asks for; validated by `check_list`."""

    statuses: Sequence[str] = ()
    workflow: str | None = None
    workspace: str | None = None
    branch: str | None = None
    text: str | None = None
    since: datetime | None = None
    archived: ArchivedFilter = "exclude"
    healthy_only: bool = False
    limit: int = DEFAULT_PAGE
    cursor: str | None = None


@dataclass(frozen=True)
class SessionList:
    summaries: tuple[SessionSummary, ...]
    next_cursor: str | None
    """Pass back as `cursor` for the next page; None on the last one."""

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_json() for s in self.summaries],
            "nextCursor": self.next_cursor,
        }


def encode_cursor(cursor: PageCursor) -> str:
    raw = json.dumps([cursor.activity_us, cursor.session_id], separators=(",", ":"))
    return "p1." + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(text: str) -> PageCursor | None:
    if not text.startswith("p1."):
        return None
    body = text[3:]
    try:
        raw = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, binascii.Error):
        return None
    if (
        isinstance(raw, list)
        and len(raw) == 2
        and isinstance(raw[0], int)
        and not isinstance(raw[0], bool)
        and isinstance(raw[1], str)
        and len(raw[1]) <= 64
    ):
        return PageCursor(raw[0], raw[1])
    return None


def check_list(
    request: ListRequest,
) -> Result[tuple[SessionFilter, PageCursor | None], EngineError]:
    parsed = parse_statuses(request.statuses)
    if isinstance(parsed, Failure):
        return Failure(parsed.failure())
    statuses = parsed.unwrap()
    if not 1 <= request.limit <= QUERY_PAGE_MAX:
        return Failure(
            validation(
                f"limit must be between 1 and {QUERY_PAGE_MAX}, got {request.limit}.",
                f"Ask for at most {QUERY_PAGE_MAX} sessions a page; page on with the cursor.",
                field="limit",
            )
        )
    if request.text is not None and not 1 <= len(request.text) <= 256:
        return Failure(
            validation(
                "The search text must be 1 to 256 characters.",
                "Search for a few words of the session's title or notes.",
                field="search",
            )
        )
    cursor = None
    if request.cursor is not None:
        cursor = decode_cursor(request.cursor)
        if cursor is None:
            return Failure(
                validation(
                    "Not a cursor this listing returned.",
                    "Pass nextCursor from the previous page unchanged, or leave it out.",
                    field="cursor",
                )
            )
    return Success((_filter_of(request, statuses), cursor))


_SHARED_FIELDS: Final = tuple(f.name for f in fields(SessionFilter) if f.name != "statuses")


def _filter_of(request: ListRequest, statuses: frozenset[RunStatus]) -> SessionFilter:
    """The store's filter for a checked request: a ListRequest carries every field of
    SessionFilter under the same name, the statuses as the words `parse_statuses` read."""
    shared = {name: getattr(request, name) for name in _SHARED_FIELDS}
    return SessionFilter(statuses=statuses, **shared)


def list_sessions(deps: EngineDeps, request: ListRequest) -> Result[SessionList, EngineError]:
    checked = check_list(request)
    if isinstance(checked, Failure):
        return Failure(checked.failure())
    where, cursor = checked.unwrap()
    if where.workspace is not None:
        where = _workspace_filter(deps, where)
    page = deps.query.page(where, limit=request.limit, cursor=cursor)
    if isinstance(page, Failure):
        return Failure(store_failure(page.failure()))
    found: SummaryPage = page.unwrap()
    following = None if found.next_cursor is None else encode_cursor(found.next_cursor)
    return Success(SessionList(found.summaries, following))


def _workspace_filter(deps: EngineDeps, where: SessionFilter) -> SessionFilter:
    """A workspace inside a git repository means every session of that repository."""
    assert where.workspace is not None
    facts = deps.probe.probe(where.workspace)
    if facts is not None and facts.repo_root_hash is not None:
        return replace(where, workspace=facts.repo_root_hash)
    if facts is not None:
        return replace(where, workspace=facts.path)
    return where


def get_summary(deps: EngineDeps, session_id: str) -> Result[SessionSummary, EngineError]:
    resolved = resolve_id(deps, session_id)
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    sid = resolved.unwrap()
    found = deps.query.get([sid])
    if isinstance(found, Failure):
        return Failure(store_failure(found.failure()))
    summary = found.unwrap().get(sid)
    if summary is None:
        return Failure(not_found(sid))
    return Success(summary)


# --- the event cursor --------------------------------------------------------------------


@dataclass(frozen=True)
class EventsPage:
    session_id: str
    events: tuple[DomainEvent, ...]
    cursor: int
    next_cursor: int
    """Where the next call starts: `cursor` + the events returned."""
    event_count: int
    """Events readable now (the validated prefix of an unhealthy session)."""
    health: SessionHealth

    @property
    def at_end(self) -> bool:
        return self.next_cursor >= self.event_count

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "cursor": self.cursor,
            "nextCursor": self.next_cursor,
            "eventCount": self.event_count,
            "health": self.health.to_json(),
            "events": [e.to_json() for e in self.events],
        }


def events_since(
    deps: EngineDeps, session_id: str, cursor: object, limit: object = 100
) -> Result[EventsPage, EngineError]:
    """Contiguous events from eventIndex `cursor`. Past the end: none. Into a part of the
    log that cannot be read: an error naming what can be (never a silent partial history).
    A session that does not exist (or no longer does): NOT_FOUND."""
    if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
        return Failure(
            validation(
                f"cursor must be a whole number >= 0, got {cursor!r}.",
                "Start at 0, then pass nextCursor from the previous page.",
                field="cursor",
            )
        )
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= EVENTS_PAGE_MAX:
        return Failure(
            validation(
                f"limit must be a whole number from 1 to {EVENTS_PAGE_MAX}, got {limit!r}.",
                f"Ask for at most {EVENTS_PAGE_MAX} events at a time.",
                field="limit",
            )
        )
    resolved = resolve_id(deps, session_id)
    if isinstance(resolved, Failure):
        return Failure(resolved.failure())
    sid = resolved.unwrap()
    read = deps.sessions.read(
        sid, lambda log: (tuple(log.events[cursor : cursor + limit]), log.count)
    )
    if isinstance(read, Success):
        events, count = read.unwrap()
        if count == 0 and not deps.sessions.exists(sid).value_or(False):
            return Failure(not_found(sid))
        return Success(
            EventsPage(sid, events, cursor, cursor + len(events), count, SessionHealth("healthy"))
        )
    failure: StoreError = read.failure()
    if failure.health is None:
        return Failure(store_failure(failure))
    return _prefix_page(deps, sid, cursor, limit, failure.health)


def _prefix_page(
    deps: EngineDeps, sid: str, cursor: int, limit: int, health: SessionHealth
) -> Result[EventsPage, EngineError]:
    """A page of an unhealthy session's validated prefix, or an error naming how far the
    log can be read when `cursor` lies beyond it."""
    prefix = deps.sessions.load_prefix(sid)
    if isinstance(prefix, Failure):
        return Failure(store_failure(prefix.failure()))
    readable = prefix.unwrap().events
    if cursor < len(readable):
        events = tuple(readable[cursor : cursor + limit])
        return Success(EventsPage(sid, events, cursor, cursor + len(events), len(readable), health))
    return Failure(
        error(
            "SESSION_NOT_HEALTHY",
            f"Events from {cursor} on cannot be read: the session is {health.kind} "
            f"after its first {len(readable)} events.",
            "Read from 0 up to readableUntil; `workrail export` can save that prefix as a "
            "salvage bundle.",
            firstReadableIndex=0 if readable else None,
            readableUntil=len(readable),
            firstUnreadableIndex=len(readable),
            health=health.to_json(),
        )
    )


def watch(
    deps: EngineDeps, session_ids: Collection[str] | None = None
) -> Result[ChangeFeed, EngineError]:
    """A feed of appends to these sessions (every session when None); close it when done."""
    feed = deps.watch.subscribe(None if session_ids is None else list(session_ids))
    if isinstance(feed, Failure):
        return Failure(store_failure(feed.failure()))
    return Success(feed.unwrap())
