"""Tokens after import: an exported mid-run session, imported elsewhere (or here, renamed),
continues with freshly minted tokens to the same next step as the original."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.engine.conftest import make_engine
from tests.engine.helpers import ok
from tests.store.plans import fresh_session_id
from workrail.bundle.export import bundle_bytes, export_session, new_bundle_id, utc_now
from workrail.bundle.import_ import ImportResult, import_bundle
from workrail.core.ids import make_id
from workrail.engine.api import Engine
from workrail.engine.imported import preferred_run, tokens_for_import


def _mid_run(engine: Engine) -> tuple[str, dict[str, Any], bytes]:
    """probe-flow advanced once (pending `build`), and its bundle at that point."""
    r = ok(engine.start_workflow("probe-flow", {"ticket": "T-7"}))
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="the plan"))
    sid = engine.deps.codec.parse_state(a["stateToken"]).unwrap().session_id
    bundle = export_session(
        engine.deps, sid, bundle_id=new_bundle_id(), exported_at=utc_now(), app_version="test"
    ).unwrap()
    return sid, a, bundle_bytes(bundle)


def _import(engine: Engine, raw: bytes) -> ImportResult:
    result: ImportResult = import_bundle(
        engine.deps, raw, mint_session_id=fresh_session_id
    ).unwrap()
    return result


def test_import_into_a_fresh_data_dir_continues_like_the_original(
    data_dir: Path, tmp_path: Path
) -> None:
    source = make_engine(data_dir)
    sid, at_build, raw = _mid_run(source)
    original_next = ok(
        source.advance(at_build["stateToken"], at_build["ackToken"], notes_markdown="built")
    )

    target = make_engine(tmp_path / "elsewhere")
    tokens = tokens_for_import(target, _import(target, raw))
    assert tokens is not None
    assert tokens["sessionId"] == sid
    assert tokens["renamed"] is False
    (run,) = tokens["runs"]
    assert set(run) == {
        "runId",
        "nodeId",
        "stateToken",
        "ackToken",
        "checkpointToken",
        "continueToken",
        "isComplete",
        "pending",
        "nextIntent",
        "nextCall",
    }
    assert run["isComplete"] is False
    assert run["pending"]["stepId"] == "build"
    assert run["nextCall"]["params"]["ackToken"] == run["ackToken"]
    chosen = preferred_run(tokens)
    assert chosen is not None
    assert chosen["runId"] == run["runId"]

    imported_next = ok(target.advance(run["stateToken"], run["ackToken"], notes_markdown="built"))
    assert imported_next["pending"] == original_next["pending"]
    assert imported_next["pending"]["stepId"] == "verify"
    # the exporter's tokens are bound to its keyring and mean nothing here
    assert target.rehydrate(at_build["stateToken"]).failure().code == "TOKEN_BAD_SIGNATURE"


def test_import_into_the_same_data_dir_is_renamed_and_usable(data_dir: Path) -> None:
    engine = make_engine(data_dir)
    sid, at_build, raw = _mid_run(engine)
    tokens = tokens_for_import(engine, _import(engine, raw))
    assert tokens["renamed"] is True
    assert tokens["sessionId"] != sid
    (run,) = tokens["runs"]
    state = engine.deps.codec.parse_state(run["stateToken"]).unwrap()
    assert state.session_id == tokens["sessionId"]
    copy_next = ok(engine.advance(run["stateToken"], run["ackToken"], notes_markdown="built"))
    original_next = ok(
        engine.advance(at_build["stateToken"], at_build["ackToken"], notes_markdown="built")
    )
    assert copy_next["pending"] == original_next["pending"]


def test_completed_run_gets_a_state_token_but_no_ack(data_dir: Path, tmp_path: Path) -> None:
    engine = make_engine(data_dir)
    r = ok(engine.start_workflow("probe-flow"))
    for notes in ("planned", "built", "verified"):
        r = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown=notes))
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    raw = bundle_bytes(
        export_session(
            engine.deps, sid, bundle_id=new_bundle_id(), exported_at=utc_now(), app_version="t"
        ).unwrap()
    )
    target = make_engine(tmp_path / "elsewhere")
    tokens = tokens_for_import(target, _import(target, raw))
    (run,) = tokens["runs"]
    assert run["isComplete"] is True
    assert run["pending"] is None
    assert "ackToken" not in run
    assert run["nextIntent"] == "complete"
    assert preferred_run(tokens) is run


def test_export_and_import_take_ids_and_time_from_the_engine(data_dir: Path) -> None:
    """The bundle id, its exportedAt and a renamed session's id come from the engine's own
    entropy and clock, never from the OS behind its back."""
    engine = make_engine(data_dir)
    sid, _, _ = _mid_run(engine)
    fixed = dataclasses.replace(
        engine.deps,
        entropy=lambda n: b"\x07" * n,
        clock=lambda: datetime(2026, 3, 4, 5, 6, 7, 890_123, tzinfo=UTC),
    )
    pinned = Engine(fixed)
    exported = pinned.export_session(sid, app_version="test").unwrap()
    assert exported.bundle.bundleId == "bundle_" + make_id("sess", b"\x07" * 16)[5:]
    assert exported.bundle.exportedAt == "2026-03-04T05:06:07.890Z"
    imported = pinned.import_session(exported.data).unwrap()  # the id is taken here
    assert imported.result.renamed is True
    assert imported.result.session_id == make_id("sess", b"\x07" * 16)
