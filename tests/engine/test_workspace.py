"""Workspace facts become observations only when the log can hold them: a branch with a
control character, or longer than a short_string, is left out rather than failing start."""

from __future__ import annotations

import pytest

from workrail.core.events import parse_event
from workrail.engine.workspace import WorkspaceFacts, observations

SESSION = "sess_akuobhxpaal3j6jgnpsnzywq2u"


def _event(index: int, kind: str, key: str, data: dict[str, object]) -> dict[str, object]:
    return {
        "v": 1,
        "eventId": "evt_vqq2qciru7aimb7dgcp43oauei",
        "eventIndex": index,
        "sessionId": SESSION,
        "kind": kind,
        "dedupeKey": key,
        "data": data,
    }


@pytest.mark.parametrize("branch", ["feat\x00x", "feat\x1bx", "b" * 81, "😀" * 41, "HEAD"])
def test_a_branch_the_log_cannot_hold_is_left_out(branch: str) -> None:
    facts = WorkspaceFacts("/w", repo_root="/w", branch=branch, head_sha="a" * 40)
    found = observations(SESSION, facts)
    assert [data["key"] for _kind, _key, data in found] == ["git_head_sha", "repo_root_hash"]


def test_every_observation_made_is_a_valid_event() -> None:
    facts = WorkspaceFacts("/w", repo_root="/w", branch="😀" * 40, head_sha="b" * 40)
    found = observations(SESSION, facts)
    assert len(found) == 3
    for index, (kind, key, data) in enumerate(found):
        parse_event(_event(index, kind, key, data))  # raises if the log could not hold it
