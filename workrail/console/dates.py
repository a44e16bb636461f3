"""Dates as people read them: "3 min ago" on the page, the exact local timestamp on hover
and in a machine-readable `<time datetime>` (so a script or a test can still read it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from markupsafe import Markup, escape

_STEPS: Final = (
    (365 * 86400, "year"),
    (30 * 86400, "month"),
    (7 * 86400, "week"),
    (86400, "day"),
    (3600, "hour"),
    (60, "min"),
)


def relative(moment: datetime, now: datetime) -> str:
    """`moment` as a distance from `now`: "just now", "5 min ago", "2 days ago", "in 3
    hours" (a clock ahead of ours)."""
    seconds = int((now - moment).total_seconds())
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        return "just now"
    count, unit = 1, "min"
    for size, name in _STEPS:
        if seconds >= size:
            count, unit = seconds // size, name
            break
    word = unit if count == 1 or unit == "min" else unit + "s"
    return f"in {count} {word}" if ahead else f"{count} {word} ago"


def _moment(value: datetime | str | None) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def time_tag(value: datetime | str | None, now: datetime | None = None) -> Markup:
    """A `<time>` element: relative text, the exact local time as its title and datetime
    attribute; "–" when there is no date."""
    moment = _moment(value)
    if moment is None:
        return Markup("–")
    exact = moment.astimezone().isoformat(timespec="seconds")
    shown = relative(moment, now or datetime.now(UTC))
    return Markup('<time datetime="{0}" title="{0}">{1}</time>').format(
        escape(exact), escape(shown)
    )
