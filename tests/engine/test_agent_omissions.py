"""An agent's omission is never an INTERNAL_ERROR: a loop over a missing or ill-typed
value the agent controls answers what is missing, its type and a nextCall supplying it,
and writes nothing. A property test drives every bundled workflow with random contexts
and outputs through the real engine and data directory (and the former bundled workflows,
kept as v1.4-era fixtures)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.engine.conftest import make_engine, memory_engine
from tests.engine.helpers import engine_runs, err, ok
from workrail.app import DiscoveredCatalog
from workrail.engine.api import Engine
from workrail.store.local.backend import LocalBackend
from workrail.workflow.sources import DiscoveryConfig

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "workflows"
LEGACY = ROOT / "tests" / "fixtures" / "legacy_workflows"
REFERENCE_WORKFLOWS = ROOT / "tests" / "fixtures" / "reference" / "workflows"
NOTES = "Done, with evidence: ran the checks, all green; test added; approve." * 3


def _events(data_dir: Path) -> int:
    sessions = LocalBackend.open(data_dir).sessions
    return sum(
        sessions.read(sid, lambda log: log.count).unwrap() for sid in sessions.list_ids().unwrap()
    )


def _advance_with(engine: Engine, call: dict[str, Any]) -> Any:
    params = call["params"]
    output = params.get("output") or {}
    return engine.advance(
        params["stateToken"],
        params["ackToken"],
        notes_markdown=output.get("notesMarkdown"),
        artifacts=output.get("artifacts"),
        context=params.get("context"),
    )


def _bundled_engine(root: Path) -> Engine:
    """The engine over the bundled library as discovery loads it (routines expanded), on
    the in-memory store (the properties are about the engine's answers, not storage)."""
    only_bundled = {"WORKFLOW_INCLUDE_USER": "false", "WORKFLOW_INCLUDE_PROJECT": "false"}
    config = DiscoveryConfig(root / "home", root, only_bundled, BUNDLED)
    return memory_engine(catalog=DiscoveredCatalog(config))


def test_a_missing_foreach_list_names_the_key_and_writes_nothing(data_dir: Path) -> None:
    engine = make_engine(data_dir, LEGACY)
    start = ok(engine.start_workflow("code-review"))
    before = _events(data_dir)
    failure = err(engine.advance(start["stateToken"], start["ackToken"], notes_markdown=NOTES))
    envelope = failure.to_envelope()
    assert envelope["code"] == "VALIDATION_ERROR"
    details = envelope["details"]
    assert details["missing"] == [
        {
            "in": "context",
            "key": "reviewAreas",
            "expectedType": "array",
            "problem": "it is not set",
            "neededBy": "loop 'review-areas' (forEach)",
        }
    ]
    assert details["validationErrors"][0]["path"] == "context.reviewAreas"
    call = details["nextCall"]
    assert call["params"]["ackToken"] == start["ackToken"]
    assert call["params"]["output"] == {"notesMarkdown": NOTES}
    assert isinstance(call["params"]["context"]["reviewAreas"], str)  # the placeholder
    assert _events(data_dir) == before  # nothing was written
    # sending nextCall verbatim fails the same way (the placeholder is not an array) ...
    again = err(_advance_with(engine, call)).to_envelope()
    assert again["details"]["missing"][0]["problem"] == "it is a string"
    # ... and with the value filled in, the same ack advances into the loop
    call["params"]["context"]["reviewAreas"] = ["api", "tests"]
    advanced = ok(_advance_with(engine, call))
    assert advanced["pending"]["stepId"] == "review-area"


def test_a_while_condition_over_an_unset_number_asks_for_it(data_dir: Path) -> None:
    engine = make_engine(data_dir, LEGACY)
    response = ok(engine.start_workflow("code-review", {"reviewAreas": [], "riskLevel": "low"}))
    while response["pending"]["stepId"] != "triage":
        response = ok(
            engine.advance(response["stateToken"], response["ackToken"], notes_markdown=NOTES)
        )
    failure = err(
        engine.advance(response["stateToken"], response["ackToken"], notes_markdown=NOTES)
    ).to_envelope()
    assert failure["code"] == "VALIDATION_ERROR"
    missing = failure["details"]["missing"][0]
    assert (missing["key"], missing["expectedType"]) == ("openBlockingFindings", "number")
    call = failure["details"]["nextCall"]
    call["params"]["context"]["openBlockingFindings"] = 0
    assert ok(_advance_with(engine, call))["pending"]["stepId"] == "verdict"


def test_a_loop_entered_without_its_control_artifact_asks_for_one(data_dir: Path) -> None:
    engine = make_engine(data_dir, REFERENCE_WORKFLOWS)
    start = ok(engine.start_workflow("loopctl-flow"))
    before = _events(data_dir)
    failure = err(
        engine.advance(start["stateToken"], start["ackToken"], notes_markdown="prepared")
    ).to_envelope()
    assert failure["code"] == "VALIDATION_ERROR"
    assert failure["details"]["missing"][0]["in"] == "artifact"
    assert _events(data_dir) == before
    call = failure["details"]["nextCall"]
    (artifact,) = call["params"]["output"]["artifacts"]
    assert artifact["kind"] == "wr.loop_control"
    assert artifact["loopId"] == "review-loop"
    artifact["decision"] = "continue"
    assert ok(_advance_with(engine, call))["pending"]["stepId"] == "review"


def test_a_first_step_loop_over_missing_context_answers_start_with_a_next_call(
    tmp_path: Path,
) -> None:
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "each-first.json").write_text(
        json.dumps(
            {
                "id": "each-first",
                "name": "Each first",
                "version": "1.0.0",
                "description": "A forEach as the very first step.",
                "steps": [
                    {
                        "id": "each",
                        "type": "loop",
                        "title": "Each",
                        "loop": {"type": "forEach", "items": "things", "maxIterations": 5},
                        "body": [{"id": "one", "title": "One", "prompt": "Do {{currentItem}}."}],
                    }
                ],
            }
        )
    )
    engine = make_engine(tmp_path / "data", workflows)
    failure = err(engine.start_workflow("each-first")).to_envelope()
    assert failure["code"] == "VALIDATION_ERROR"
    call = failure["details"]["nextCall"]
    assert call["tool"] == "start_workflow"
    assert "things" in call["params"]["context"]
    assert not (tmp_path / "data" / "sessions").exists() or not list(
        (tmp_path / "data" / "sessions").iterdir()
    )


# --- the property: no agent input makes any bundled workflow fail internally --------------


def _variables(definition: Any) -> list[str]:
    """Every context key a workflow's conditions and loops read."""
    found: set[str] = set()
    stack = [definition]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in ("var", "items", "count"):
                if isinstance(node.get(key), str):
                    found.add(node[key])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 30)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.sampled_from(["", "high", "low", "large", "true", "false", "3", "x"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


def _artifacts(loop_ids: list[str]) -> st.SearchStrategy[list[Any]]:
    loop_control = st.fixed_dictionaries(
        {
            "kind": st.just("wr.loop_control"),
            "loopId": st.sampled_from([*loop_ids, "nope"]),
            "decision": st.sampled_from(["continue", "stop", "maybe"]),
        }
    )
    return st.lists(loop_control | JSON_VALUES, max_size=2)


def _loop_ids(definition: Any) -> list[str]:
    return [s["id"] for s in definition["steps"] if s.get("type") == "loop"] or ["none"]


WORKFLOW_FILES = sorted(
    [*BUNDLED.glob("*.json"), *LEGACY.glob("*.json"), *REFERENCE_WORKFLOWS.glob("*.json")]
)


@pytest.fixture(scope="module")
def shared_dirs() -> Iterator[dict[str, Engine]]:
    with tempfile.TemporaryDirectory() as root:
        engines = {
            "bundled": _bundled_engine(Path(root) / "bundled"),
            "legacy": memory_engine(LEGACY),
            "reference": memory_engine(REFERENCE_WORKFLOWS),
        }
        yield engines


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.stem)
def test_random_contexts_and_outputs_never_produce_an_internal_error(
    path: Path, shared_dirs: dict[str, Engine]
) -> None:
    definition = json.loads(path.read_text())
    engine = shared_dirs[{BUNDLED: "bundled", LEGACY: "legacy"}.get(path.parent, "reference")]
    keys = _variables(definition) or ["anything"]
    contexts = st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=len(keys))
    step = st.tuples(
        st.none() | st.sampled_from(["", "ok", NOTES]),
        _artifacts(_loop_ids(definition)),
        st.none() | contexts,
        st.booleans(),  # follow the error's nextCall (with its placeholder) or not
    )

    @engine_runs(max_examples=25)
    @given(start_context=st.none() | contexts, steps=st.lists(step, max_size=10))
    def run(start_context: dict[str, Any] | None, steps: list[Any]) -> None:
        started = engine.start_workflow(definition["id"], start_context)
        answer = started.value_or(None)
        if answer is None:
            assert started.failure().code != "INTERNAL_ERROR", started.failure()
            return
        call = answer.get("nextCall")
        for notes, artifacts, context, follow in steps:
            if call is None or call["tool"] != "continue_workflow":
                return
            params = call["params"]
            result = engine.advance(
                params["stateToken"],
                params["ackToken"],
                notes_markdown=notes,
                artifacts=artifacts,
                context=context,
            )
            if result.value_or(None) is None:
                failure = result.failure()
                assert failure.code != "INTERNAL_ERROR", failure.to_envelope()
                next_call = failure.details.get("nextCall")
                if follow and next_call is not None:
                    call = next_call
                continue
            call = result.unwrap().get("nextCall")

    run()
