"""The step graph and chart markup: what each kind of step looks like, escaping of every
text that came from a file, and a routine call's figures summed over its steps."""

from __future__ import annotations

from workrail.console.workflow_graph import (
    chart_svg,
    describe_condition,
    figures_for,
    graph_steps,
    graph_svg,
)
from workrail.engine.api import StepStats

STEPS = [
    {"id": "triage", "title": "Triage <script>alert(1)</script>", "prompt": "x"},
    {
        "id": "deep",
        "title": "Deep dive",
        "prompt": "x",
        "runCondition": {"and": [{"var": "risk", "equals": "high"}, {"var": "n", "gte": 3}]},
    },
    {"id": "gather", "title": "Gather", "templateCall": {"templateId": "wr.templates.routine.ctx"}},
    {
        "id": "review",
        "type": "loop",
        "title": "Review",
        "loop": {
            "type": "while",
            "maxIterations": 3,
            "conditionSource": {"kind": "artifact_contract"},
        },
        "body": [{"id": "pass", "title": "One pass", "prompt": "x"}],
    },
]


def test_every_kind_of_step_has_its_shape_and_texts_are_escaped() -> None:
    svg = str(graph_svg(graph_steps(STEPS), {}))
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert svg.count('class="wg-box wg-step"') == 2  # triage, the loop's body
    assert 'class="wg-box wg-step wg-conditional"' in svg
    assert 'class="wg-box wg-routine"' in svg
    assert "routine wr.templates.routine.ctx" in svg
    assert 'class="wg-loop"' in svg
    assert "decided by the agent" in svg
    assert 'class="wg-cond">if risk = &#34;high&#34; and n ≥ 3<' in svg


def test_conditions_read_as_people_write_them() -> None:
    assert describe_condition({"var": "size", "equals": "large"}) == 'size = "large"'
    assert describe_condition({"not": {"var": "done"}}) == "not (done)"
    assert describe_condition({"var": "tags", "in": ["a", "b"]}) == 'tags in ["a", "b"]'
    assert describe_condition({}) is None


def test_a_routine_call_shows_the_figures_of_its_expanded_steps() -> None:
    first, second = StepStats("gather__read"), StepStats("gather__write")
    first.reached, first.completed, first.blocked = 4, 4, 1
    second.reached, second.completed, second.blocked = 4, 3, 2
    box = graph_steps(STEPS)[2]
    total = figures_for(box, {"gather__read": first, "gather__write": second, "other": first})
    assert total is not None
    assert (total.reached, total.completed, total.blocked) == (4, 3, 3)


def test_the_chart_marks_blocked_steps_only() -> None:
    stats = StepStats("triage")
    stats.reached, stats.completed, stats.blocked = 2, 1, 2
    svg = str(chart_svg(graph_steps(STEPS), {"triage": stats}))
    assert svg.count('class="wc-row"') == 4
    assert svg.count("wc-blocked") == 1
