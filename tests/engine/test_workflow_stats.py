"""Per-step figures of a workflow from the runs in the store, on both backends: reached,
completed, blocked, loop iterations, time and the metrics agents reported."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.conftest import engine_over
from tests.engine.helpers import ok
from workrail.app import open_backend_at
from workrail.engine.api import Engine
from workrail.engine.workflow_stats import base_step
from workrail.store.ports import Backend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
STOP = {"kind": "wr.loop_control", "loopId": "polish", "decision": "stop"}


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Backend]:
    if request.param == "files":
        opened = open_backend_at(data_dir).unwrap()
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        opened = open_backend_at(cluster.url(cluster.create_database("stats"))).unwrap()
    yield opened
    opened.close()


def _advance(engine: Engine, answer: dict[str, Any], **output: Any) -> dict[str, Any]:
    params = answer["nextCall"]["params"]
    return ok(
        engine.advance(
            params["stateToken"],
            params["ackToken"],
            notes_markdown=output.get("notes", "done"),
            artifacts=output.get("artifacts"),
            context=output.get("context"),
        )
    )


def _full_run(engine: Engine, items: list[str], *, blocked_first: bool) -> None:
    answer = ok(engine.start_workflow("agent-probe"))
    if blocked_first:
        answer = _advance(engine, answer, notes="no heading")
        assert answer["kind"] == "blocked"
    answer = _advance(
        engine,
        answer,
        notes="Items: " + ", ".join(items),
        context={"items": items, "size": "small", "metrics_files_changed": len(items)},
        artifacts=[STOP],
    )
    while not answer["isComplete"]:
        answer = _advance(engine, answer, artifacts=[STOP])


def test_figures_count_reached_completed_blocked_and_iterations(backend: Backend) -> None:
    engine = engine_over(backend, FIXTURES)
    _full_run(engine, ["a", "b", "c"], blocked_first=True)
    _full_run(engine, ["a"], blocked_first=False)
    ok(engine.start_workflow("agent-probe"))  # a third run that stops at the first step
    stats = engine.workflow_stats("agent-probe").unwrap()
    assert (stats.runs, stats.complete_runs, stats.sessions_read) == (3, 2, 3)
    collect = stats.steps["collect"]
    assert (collect.reached, collect.completed, collect.blocked) == (3, 2, 1)
    assert collect.completion_rate == pytest.approx(2 / 3)
    item = stats.steps["process-item"]
    assert (item.reached, item.completed) == (2, 2)
    assert sorted(item.iterations) == [1, 3]
    assert "large-only" not in stats.steps  # its condition never held
    assert stats.steps["wrap-up"].completed == 2
    assert all(s >= 0 for step in stats.steps.values() for s in step.seconds)
    assert stats.steps["collect"].seconds  # the store knows when each append landed
    files = stats.metrics["metrics_files_changed"]
    assert (files.reported, files.median) == (2, 2.0)


def test_a_workflow_without_runs_has_no_figures(backend: Backend) -> None:
    engine = engine_over(backend, FIXTURES)
    stats = engine.workflow_stats("agent-probe").unwrap()
    assert (stats.runs, stats.steps, stats.metrics) == (0, {}, {})


def test_instance_keys_name_their_step_and_loop_frames() -> None:
    assert base_step("plan") == ("plan", ())
    assert base_step("each@2::work") == ("work", (("each", 2),))
    assert base_step("outer@0/inner@11::x") == ("x", (("outer", 0), ("inner", 11)))
