from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundle.helpers import BLOCKED, PROBE, export
from workrail.bundle.export import bundle_bytes
from workrail.bundle.rename import rename_dedupe_key, rename_session
from workrail.bundle.validate import check_bundle
from workrail.core.ids import make_id
from workrail.store.local.backend import LocalBackend

NEW = make_id("sess", b"\x09" * 16)


def test_dedupe_key_renames_whole_fields_only() -> None:
    old = "sess_abc"
    assert (
        rename_dedupe_key(f"session_created:{old}", old, "sess_new") == "session_created:sess_new"
    )
    assert (
        rename_dedupe_key(f"checkpoint_node:checkpoint:{old}:run_x:node_y:attempt_z", old, "sess_n")
        == "checkpoint_node:checkpoint:sess_n:run_x:node_y:attempt_z"
    )
    # a field that merely contains the id is left alone
    assert rename_dedupe_key(f"x:{old}x:{old}->{old}", old, "sess_n") == f"x:{old}x:{old}->{old}"


@pytest.mark.parametrize("sid", [PROBE, BLOCKED])
def test_renamed_bundle_is_valid_and_renaming_back_restores_it(
    reference_data: Path, sid: str
) -> None:
    original = export(LocalBackend.open(reference_data), sid)
    renamed = rename_session(original, NEW)
    assert check_bundle(renamed).unwrap()
    session = renamed.session_json()
    assert session["sessionId"] == NEW
    assert all(r["sessionId"] == NEW for r in session["manifest"])
    assert sid not in bundle_bytes(renamed).decode()
    # only ids that name the session changed: run/node/event ids and content are kept
    assert [e.eventId for e in renamed.session.events] == [
        e.eventId for e in original.session.events
    ]
    assert renamed.session.snapshots == original.session.snapshots
    assert bundle_bytes(rename_session(renamed, sid)) == bundle_bytes(original)


def test_rename_refuses_a_bad_id(reference_data: Path) -> None:
    original = export(LocalBackend.open(reference_data), PROBE)
    with pytest.raises(ValueError, match="not a session id"):
        rename_session(original, "../escape")
