"""The facade as the transports' one door: the reads and the bundle steps the CLI and the
console used to run over a raw backend, and the clock and entropy the composition root
hands the engine."""

from __future__ import annotations

import os
from pathlib import Path

from tests.engine.conftest import make_engine, memory_engine
from tests.engine.helpers import ok
from workrail.engine.api import Engine, validate_bundle


def _started(engine: Engine) -> str:
    started = ok(engine.start_workflow("probe-flow", {"ticket": "T-1"}))
    session_id: str = started["sessionId"]
    return session_id


def test_a_session_is_viewed_and_inspected_through_the_engine() -> None:
    engine = memory_engine()
    session_id = _started(engine)
    view = engine.session_view(session_id)
    assert view.session_id == session_id
    assert view.is_healthy
    assert [run.workflow_id for run in view.runs] == ["probe-flow"]
    inspection = engine.inspect_session(session_id)
    assert inspection.view.event_count == view.event_count > 0
    assert inspection.node_known
    tip = view.runs[0].preferred_tip
    assert tip is not None
    detail = engine.inspect_session(session_id, tip, all_states=False)
    assert detail.node is not None
    assert detail.node.node_id == tip
    assert not engine.inspect_session(session_id, "node_nosuchnode").node_known


def test_a_validated_bundle_is_imported_once_and_then_found_held(
    data_dir: Path, tmp_path: Path
) -> None:
    """What `workrail import` does without --copy: validate (no store needed), ask whether
    the store holds it already, import the validated bundle, ask again."""
    source = make_engine(data_dir)
    session_id = _started(source)
    exported = source.export_session(session_id, app_version="test").unwrap()
    validated = validate_bundle(exported.data).unwrap()
    assert source.bundle_held_as(validated).unwrap() == session_id

    target = make_engine(tmp_path / "elsewhere")
    assert target.bundle_held_as(validated).unwrap() is None
    imported = target.import_session(validated).unwrap()
    assert imported.result.session_id == session_id
    assert imported.result.renamed is False
    assert [run["runId"] for run in imported.tokens["runs"]] == [
        run.run_id for run in imported.result.runs
    ]
    assert target.bundle_held_as(validated).unwrap() == session_id


def test_the_composition_root_hands_the_engine_one_clock_and_one_entropy(tmp_path: Path) -> None:
    from workrail import app
    from workrail.config import load_config

    env = {"WORKRAIL_STORE_URL": "memory://", "WORKRAIL_DATA_DIR": str(tmp_path / "data")}
    config = load_config(env, home=tmp_path, cwd=tmp_path).unwrap()
    engine = app.build_engine(config, app.open_backend(config).unwrap()).unwrap()
    assert engine.deps.clock is app.utc_now
    assert engine.deps.entropy is os.urandom
