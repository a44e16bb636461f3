"""Hostile and sloppy output for current-language steps: random notes, random artifacts
(assessments with wrong shapes and levels, contracts with wrong fields, loop decisions for
unknown loops, any JSON) and random context never produce an INTERNAL_ERROR. Every answer
is a result, a block with a fix, or an error that says what to send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.engine.conftest import memory_engine
from tests.engine.helpers import engine_runs
from tests.engine.test_agent_omissions import JSON_VALUES, NOTES
from workrail.engine.api import Engine
from workrail.workflow.contracts import CONTRACTS

RUNTIME = Path(__file__).resolve().parents[1] / "workflow" / "fixtures" / "v3" / "runtime"
FILES = sorted(RUNTIME.glob("*.json"))
LEVELS = st.sampled_from(["low", "LOW", " High ", "medium", "large", "small", "", "maybe"])
DIMENSIONS = st.dictionaries(
    st.sampled_from(["evidence", "coverage", "blast", "other"]),
    LEVELS | st.fixed_dictionaries({"level": LEVELS}) | JSON_VALUES,
    max_size=4,
)
ASSESSMENTS = st.fixed_dictionaries(
    {"kind": st.just("wr.assessment"), "dimensions": DIMENSIONS | JSON_VALUES},
    optional={"assessmentId": st.sampled_from(["readiness", "risk", "ghost"]) | JSON_VALUES},
)
CONTRACT_ARTIFACTS = st.sampled_from(sorted(CONTRACTS)).flatmap(
    lambda ref: st.builds(
        lambda template, extra: {**template, **extra},
        st.just(CONTRACTS[ref].template("polish")),
        st.dictionaries(st.sampled_from(["verdict", "version", "findings", "x"]), JSON_VALUES),
    )
)
ARTIFACTS = st.lists(ASSESSMENTS | CONTRACT_ARTIFACTS | JSON_VALUES, max_size=3)
CONTEXTS = st.dictionaries(
    st.sampled_from(["tier", "areas", "audience", "perfSensitive", "folders"]),
    JSON_VALUES,
    max_size=3,
)


@pytest.fixture(scope="module")
def engine() -> Engine:
    """On the in-memory store: the property is about the engine's answers, not storage."""
    return memory_engine(RUNTIME)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_random_output_never_produces_an_internal_error(path: Path, engine: Engine) -> None:
    workflow_id = json.loads(path.read_text())["id"]
    step = st.tuples(st.none() | st.sampled_from(["", NOTES]), ARTIFACTS, st.none() | CONTEXTS)

    @engine_runs(max_examples=20)
    @given(context=st.none() | CONTEXTS, steps=st.lists(step, max_size=8))
    def run(context: dict[str, Any] | None, steps: list[Any]) -> None:
        started = engine.start_workflow(workflow_id, context)
        answer = started.value_or(None)
        if answer is None:
            assert started.failure().code != "INTERNAL_ERROR", started.failure()
            return
        call = answer.get("nextCall")
        for notes, artifacts, delta in steps:
            if call is None or call["tool"] != "continue_workflow":
                return
            params = call["params"]
            result = engine.advance(
                params["stateToken"],
                params["ackToken"],
                notes_markdown=notes,
                artifacts=[*params.get("output", {}).get("artifacts", []), *artifacts],
                context=delta,
            )
            if result.value_or(None) is None:
                failure = result.failure()
                assert failure.code != "INTERNAL_ERROR", failure.to_envelope()
                continue
            answered = result.unwrap()
            if answered.get("kind") == "blocked":
                assert answered["blockers"]["blockers"], answered
                assert all(b.get("suggestedFix") for b in answered["blockers"]["blockers"])
            call = answered.get("nextCall")

    run()
