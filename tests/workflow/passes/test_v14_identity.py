"""Property: the new pipeline leaves every v1.4-era (v0.2.0-format) definition untouched,
so its pinned snapshot and workflowHash are exactly what they were before the pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from workrail.workflow.catalog import FoundFile, LoadedWorkflow, WorkflowSource, load_file
from workrail.workflow.envelopes import pin_workflow
from workrail.workflow.pipeline import compile_source
from workrail.workflow.validate import validate_workflow

step_ids = st.from_regex(r"[a-z][a-z0-9-]{2,10}", fullmatch=True)
texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40
)
var_names = st.sampled_from(["mode", "count", "flag", "tags"])
scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.sampled_from(["a", "b", "deep"]))
simple_conditions = st.one_of(
    st.builds(lambda v, x: {"var": v, "equals": x}, var_names, scalars),
    st.builds(lambda v, x: {"var": v, "not_equals": x}, var_names, scalars),
    st.builds(lambda v, n: {"var": v, "gt": n}, var_names, st.integers(-3, 3)),
)
conditions = st.one_of(
    simple_conditions,
    st.builds(lambda cs: {"and": cs}, st.lists(simple_conditions, min_size=1, max_size=2)),
    st.builds(lambda c: {"not": c}, simple_conditions),
)
rules = st.one_of(
    st.builds(lambda v: {"type": "contains", "value": v, "message": "m"}, texts),
    st.builds(lambda n: {"type": "length", "min": n, "message": "m"}, st.integers(0, 5)),
    st.just({"type": "regex", "pattern": "^[a-z]+", "flags": "i", "message": "m"}),
)


@st.composite
def standard_steps(draw: st.DrawFn, step_id: str) -> dict[str, Any]:
    step: dict[str, Any] = {"id": step_id, "title": draw(texts), "prompt": draw(texts)}
    if draw(st.booleans()):
        step["runCondition"] = draw(conditions)
    if draw(st.booleans()):
        step["requireConfirmation"] = draw(st.one_of(st.booleans(), conditions))
    if draw(st.booleans()):
        step["validationCriteria"] = draw(st.lists(rules, min_size=1, max_size=2))
    if draw(st.booleans()):
        step["guidance"] = draw(st.lists(texts, max_size=2))
    return step


@st.composite
def v14_workflows(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(step_ids, min_size=1, max_size=6, unique=True))
    steps: list[dict[str, Any]] = []
    used: set[str] = set(ids)
    for sid in ids:
        if draw(st.integers(0, 4)) == 0:
            inner_id = sid + "-body"
            assume(inner_id not in used)
            used.add(inner_id)
            loop: dict[str, Any] = {
                "type": "for",
                "count": draw(st.integers(0, 3)),
                "maxIterations": 5,
            }
            if draw(st.booleans()):
                loop = {
                    "type": "while",
                    "condition": draw(simple_conditions),
                    "maxIterations": 3,
                }
            steps.append(
                {
                    "id": sid,
                    "type": "loop",
                    "title": "Loop",
                    "loop": loop,
                    "body": [draw(standard_steps(inner_id))],
                }
            )
        else:
            steps.append(draw(standard_steps(sid)))
    definition: dict[str, Any] = {
        "id": draw(st.from_regex(r"[a-z][a-z0-9-]{2,12}", fullmatch=True)),
        "name": draw(texts),
        "description": draw(texts),
        "version": "1.0.0",
        "steps": steps,
    }
    if draw(st.booleans()):
        definition["metaGuidance"] = draw(st.lists(texts, max_size=2, unique=True))
    return definition


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(v14_workflows())
def test_v14_definitions_pass_through_the_pipeline_untouched(raw: dict[str, Any]) -> None:
    assume(validate_workflow(raw) == [])
    before = pin_workflow(json.loads(json.dumps(raw)))
    result = compile_source(raw)
    assert result.unwrap() is raw
    loaded = load_file(
        FoundFile(
            WorkflowSource("custom", Path("lib")),
            Path("lib/x.json"),
            json.dumps(raw).encode(),
        )
    )
    assert isinstance(loaded, LoadedWorkflow)
    assert loaded.source_definition is None
    assert loaded.pinned().workflow_hash() == before.workflow_hash()
    assert loaded.pinned().canonical_bytes() == before.canonical_bytes()
