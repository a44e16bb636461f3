"""The lifecycle record beside a session's log: bounded when built, and a stored record
whose workspace path is too long keeps everything but the path."""

from __future__ import annotations

from workrail.core.lifecycle import MAX_WORKSPACE_PATH, SessionLifecycle

LONG = "/w/" + "a" * MAX_WORKSPACE_PATH
AT = "2026-01-01T00:00:00Z"


def test_a_path_too_long_to_keep_is_dropped_when_the_record_is_built() -> None:
    record = SessionLifecycle(workspace_path=LONG).archive(AT)
    assert record == SessionLifecycle(archived=True, archived_at=AT)
    assert record.to_json()["workspacePath"] is None


def test_a_path_at_the_bound_is_kept() -> None:
    path = "/" + "a" * (MAX_WORKSPACE_PATH - 1)
    assert SessionLifecycle(workspace_path=path).workspace_path == path


def test_a_stored_record_with_an_over_long_path_keeps_its_archive_state() -> None:
    stored = {"v": 1, "archived": True, "archivedAt": AT, "workspacePath": LONG}
    assert SessionLifecycle.from_json(stored) == SessionLifecycle(archived=True, archived_at=AT)


def test_records_of_the_wrong_shape_are_still_refused() -> None:
    bad: tuple[object, ...] = (
        None,
        [],
        {"v": 2, "archived": True},
        {"v": 1, "archived": "yes"},
        {"v": 1, "archived": True, "archivedAt": 5},
        {"v": 1, "archived": False, "workspacePath": 7},
    )
    for raw in bad:
        assert SessionLifecycle.from_json(raw) is None, raw
