"""The console shows what the current language adds: a workflow's about text and examples
in the catalogue, and the metrics_* values an agent reported on the session page."""

from __future__ import annotations

from pathlib import Path

from tests.console.conftest import Store, start_console
from tests.engine.helpers import ok

V3 = Path(__file__).resolve().parents[1] / "workflow" / "fixtures" / "v3"


def test_metrics_and_catalogue_metadata_are_shown(store: Store) -> None:
    engine = store.engine(V3)
    started = ok(engine.start_workflow("v3.metrics"))
    ok(
        engine.advance(
            started["stateToken"],
            started["ackToken"],
            notes_markdown="Changed the code.",
            context={"metrics_commit_shas": ["abc123", "def456"], "metrics_outcome": "success"},
        )
    )
    running = start_console(store.data_dir, V3, store.url)
    try:
        page = running.get(f"/sessions/{started['sessionId']}")
        assert page.status == 200
        assert 'id="session-metrics"' in page.body
        assert "commit shas" in page.body
        assert "abc123, def456" in page.body
        assert "success" in page.body
        plain = ok(engine.start_workflow("v3.fragments"))
        assert 'id="session-metrics"' not in running.get(f"/sessions/{plain['sessionId']}").body
        detail = running.get("/workflows/v3.metrics")
        assert detail.status == 200
        assert "Metrics probe" in detail.body
        assert "Fix the flaky login test and open a pull request" in detail.body
        assert "metrics profile" in detail.body  # the constructs it uses, with their release
        catalogue = running.get("/workflows")
        assert "e.g. Fix the flaky login test" in catalogue.body
    finally:
        running.stop()
        running.backend.close()
