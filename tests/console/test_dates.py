"""Dates on the console's pages: relative text, the exact local time on hover."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workrail.console.dates import relative, time_tag

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "text"),
    [
        (timedelta(seconds=3), "just now"),
        (timedelta(minutes=1), "1 min ago"),
        (timedelta(minutes=59), "59 min ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=30), "1 day ago"),
        (timedelta(days=3), "3 days ago"),
        (timedelta(days=15), "2 weeks ago"),
        (timedelta(days=70), "2 months ago"),
        (timedelta(days=800), "2 years ago"),
        (timedelta(hours=-3), "in 3 hours"),
    ],
)
def test_relative_reads_as_a_distance(ago: timedelta, text: str) -> None:
    assert relative(NOW - ago, NOW) == text


def test_the_tag_carries_the_exact_time_and_survives_odd_values() -> None:
    tag = str(time_tag(NOW - timedelta(minutes=5), NOW))
    exact = (NOW - timedelta(minutes=5)).astimezone().isoformat(timespec="seconds")
    assert tag == f'<time datetime="{exact}" title="{exact}">5 min ago</time>'
    assert str(time_tag("2026-03-01T11:00:00+00:00", NOW)).endswith(">1 hour ago</time>")
    assert str(time_tag(None, NOW)) == "–"
    assert str(time_tag("not a date", NOW)) == "–"
