"""The Sessions list's filters, read from the query string.

Pure: query values in, the engine's `ListRequest` and notices out. A malformed value is
dropped with a notice that says what was ignored (never an error page), so a shared link
with one stale filter still shows something useful.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final
from urllib.parse import urlencode

from workrail.core.summary import RUN_STATUSES, status_word
from workrail.engine.sessions import ListRequest, decode_cursor, did_you_mean
from workrail.store.ports import ArchivedFilter

LIST_PAGE: Final = 50
MAX_TEXT: Final = 256
MAX_FIELD: Final = 200
ARCHIVED_CHOICES: Final[tuple[ArchivedFilter, ...]] = ("exclude", "include", "only")
_RELATIVE = re.compile(r"^(\d{1,4})([hdw])$")
_UNITS: Final = {"h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class ListFilters:
    """The filters as the page shows them (and puts back into its links)."""

    statuses: tuple[str, ...] = ()
    workflow: str = ""
    workspace: str = ""
    branch: str = ""
    text: str = ""
    since: str = ""
    archived: ArchivedFilter = "exclude"
    cursor: str = ""
    notices: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(
            self.statuses
            or self.workflow
            or self.workspace
            or self.branch
            or self.text
            or self.since
            or self.archived != "exclude"
        )

    def query(self, *, cursor: str | None = None) -> str:
        """This filter's query string, on the first page or at `cursor`."""
        pairs: list[tuple[str, str]] = [("status", s) for s in self.statuses]
        for name, value in (
            ("workflow", self.workflow),
            ("workspace", self.workspace),
            ("branch", self.branch),
            ("q", self.text),
            ("since", self.since),
        ):
            if value:
                pairs.append((name, value))
        if self.archived != "exclude":
            pairs.append(("archived", self.archived))
        if cursor:
            pairs.append(("cursor", cursor))
        return urlencode(pairs)


def _since(raw: str, now: datetime) -> datetime | None:
    """`7d`, `24h`, `2w`, a date (`2026-11-30`) or an ISO date-time; None when neither."""
    relative = _RELATIVE.match(raw)
    if relative is not None:
        amount, unit = int(relative[1]), _UNITS[relative[2]]
        return now - timedelta(**{unit: amount})
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _short(raw: str) -> str:
    return repr(raw[:40] + ("…" if len(raw) > 40 else ""))


def _statuses(statuses: Sequence[str], notices: list[str]) -> tuple[str, ...]:
    """The known statuses asked for, each once; an unknown one is a notice."""
    chosen: list[str] = []
    for status in statuses:
        word = status_word(status)
        if word is not None:
            if word not in chosen:
                chosen.append(word)
        elif status:
            hint = did_you_mean(status, RUN_STATUSES)
            notices.append(
                f"Ignored status={_short(status)}: "
                + (f"did you mean {hint!r}? " if hint else "")
                + f"Statuses are {', '.join(RUN_STATUSES)}."
            )
    return tuple(chosen)


def _since_filter(raw: str, now: datetime, notices: list[str]) -> tuple[str, datetime | None]:
    """The `since` value as shown, and the moment it means (both empty when unreadable)."""
    if not raw:
        return "", None
    since = _since(raw, now)
    if since is None:
        notices.append(f"Ignored since={_short(raw)}: use 24h, 7d, 2w or a date like 2026-11-30.")
        return "", None
    return raw, since


def _archived(params: Mapping[str, str], notices: list[str]) -> ArchivedFilter:
    raw = params.get("archived", "exclude") or "exclude"
    for choice in ARCHIVED_CHOICES:
        if choice == raw:
            return choice
    notices.append(f"Ignored archived={_short(raw)}: use include or only.")
    return "exclude"


def _cursor(params: Mapping[str, str], notices: list[str]) -> str:
    cursor = params.get("cursor", "")
    if cursor and decode_cursor(cursor) is None:
        notices.append("Ignored a page cursor this list did not hand out; showing the first page.")
        return ""
    return cursor


def parse_list(
    params: Mapping[str, str], statuses: Sequence[str], now: datetime
) -> tuple[ListFilters, ListRequest]:
    """The filters a query string asks for, and the request to send the engine."""
    notices: list[str] = []
    chosen = _statuses(statuses, notices)

    def text(name: str, limit: int = MAX_FIELD) -> str:
        value = params.get(name, "").strip()
        if len(value) > limit:
            notices.append(f"Ignored {name}: longer than {limit} characters.")
            return ""
        return value

    workflow, workspace, branch = text("workflow"), text("workspace", 4096), text("branch")
    search = text("q", MAX_TEXT)
    since_raw, since = _since_filter(text("since"), now, notices)
    archived = _archived(params, notices)
    cursor = _cursor(params, notices)
    shown = ListFilters(
        chosen,
        workflow,
        workspace,
        branch,
        search,
        since_raw,
        archived,
        cursor,
        tuple(notices),
    )
    request = ListRequest(
        statuses=chosen,
        workflow=workflow or None,
        workspace=workspace or None,
        branch=branch or None,
        text=search or None,
        since=since,
        archived=archived,
        limit=LIST_PAGE,
        cursor=cursor or None,
    )
    return shown, request
