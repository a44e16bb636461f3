"""The console's workflow page in a real browser, on both backends: the step graph is
drawn (loops, conditions), the per-step figures and the chart show for a workflow with
runs, and a workflow without runs says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import REFERENCE
from tests.console.conftest import Store, screenshot, start_console
from tests.engine.helpers import ok
from workrail.engine.api import Engine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
STOP = {"kind": "wr.loop_control", "loopId": "polish", "decision": "stop"}


def _advance(engine: Engine, answer: dict[str, Any], notes: str, **more: Any) -> dict[str, Any]:
    params = answer["nextCall"]["params"]
    return ok(
        engine.advance(params["stateToken"], params["ackToken"], notes_markdown=notes, **more)
    )


def _runs(engine: Engine) -> None:
    """Two runs: one blocked once at `collect`, then driven to the end over two items."""
    answer = ok(engine.start_workflow("agent-probe"))
    answer = _advance(engine, answer, "no heading")
    assert answer["kind"] == "blocked"
    answer = _advance(
        engine,
        answer,
        "Items: a, b",
        context={"items": ["a", "b"], "metrics_outcome": "shipped"},
        artifacts=[STOP],
    )
    while not answer["isComplete"]:
        answer = _advance(engine, answer, "done", artifacts=[STOP])
    ok(engine.start_workflow("agent-probe"))


def _open(page: Any, base_url: str, secret_url: str, path: str) -> None:
    page.goto(secret_url)
    page.goto(base_url + path)
    page.wait_for_function("() => document.body.dataset.ready === '1'")


def test_a_workflow_with_runs_shows_its_graph_figures_and_chart(page: Any, store: Store) -> None:
    _runs(store.engine(FIXTURES))
    running = start_console(store.data_dir, FIXTURES, store.url)
    try:
        _open(page, running.base_url, running.secret_url, "/workflows/agent-probe")
        graph = page.locator("#workflow-graph svg.workflow-graph")
        assert graph.count() == 1
        assert page.locator("g.wg-box").count() == 5  # collect, large-only, 2 bodies, wrap-up
        assert page.locator("g.wg-loop").count() == 2
        conditional = page.locator("g.wg-conditional")
        assert conditional.count() == 1
        assert conditional.get_attribute("data-step") == "large-only"
        assert page.locator("text.wg-cond").text_content() == 'if size = "large"'
        collect = page.locator("table.step-stats tr[data-step=collect]").inner_text()
        assert "2" in collect
        assert "(50 %)" in collect
        cells = page.locator("table.step-stats tr[data-step=collect] td").all_inner_texts()
        assert cells[1:4] == ["2", "1 (50 %)", "1"]  # reached, completed, blocked
        item = page.locator("table.step-stats tr[data-step=process-item] td").all_inner_texts()
        assert item[5] == "2"  # loop iterations
        assert page.locator("svg.workflow-chart g.wc-row").count() == 5
        assert page.locator("svg.workflow-chart circle.wc-blocked").count() == 1
        assert "metrics_outcome" in page.locator("table.metric-stats").inner_text()
        assert "shipped (1)" in page.locator("table.metric-stats").inner_text()
        assert page.errors == []
        screenshot(page, "workflow-stats")
    finally:
        running.stop()
        running.backend.close()


def test_a_workflow_without_runs_says_so(page: Any, store: Store) -> None:
    running = start_console(store.data_dir, REFERENCE / "workflows", store.url)
    try:
        _open(page, running.base_url, running.secret_url, "/workflows/probe-flow")
        assert page.locator("g.wg-box").count() == 3
        assert "No runs of this workflow" in page.locator(".empty-state").inner_text()
        assert page.locator("svg.workflow-chart").count() == 0
        assert page.locator("table.step-stats").count() == 0
    finally:
        running.stop()
        running.backend.close()
