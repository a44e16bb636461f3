"""The contract registry: every template passes its contract, each contract rejects what
WorkRail rejects (strict tops, lenient nested objects, open review findings), the first
artifact of a kind decides, and validation knows every registered contract."""

from __future__ import annotations

from typing import Any

import pytest

from tests.workflow.wf_helpers import make_workflow, step
from workrail.workflow.contracts import (
    CONTRACTS,
    KNOWN_CONTRACTS,
    REVIEW_VERDICT_CONTRACT,
    check_contract,
    contract,
)
from workrail.workflow.validate import validate_workflow


@pytest.mark.parametrize("ref", sorted(CONTRACTS))
def test_every_template_passes_its_own_contract(ref: str) -> None:
    spec = CONTRACTS[ref]
    template = spec.template("the-loop")
    assert spec.matches(template)
    assert spec.issues(template) == []
    assert spec.template(None) == spec.template(None)  # fresh copies, equal


@pytest.mark.parametrize("ref", sorted(CONTRACTS))
def test_an_unknown_top_level_field_is_reported(ref: str) -> None:
    spec = CONTRACTS[ref]
    issues = spec.issues({**spec.template("x"), "surprise": 1})
    assert any(issue.startswith("surprise:") for issue in issues)


def _with(ref: str, **changes: Any) -> dict[str, Any]:
    template = CONTRACTS[ref].template("x")
    for path, value in changes.items():
        target = template
        *parents, last = path.split("__")
        for key in parents:
            target = target[key]
        if value is ...:
            del target[last]
        else:
            target[last] = value
    return template


@pytest.mark.parametrize(
    ("ref", "changes", "where"),
    [
        ("wr.contracts.review_verdict", {"verdict": "fine"}, "verdict"),
        ("wr.contracts.review_verdict", {"summary": ""}, "summary"),
        (
            "wr.contracts.review_verdict",
            {"findings": [{"severity": "huge", "summary": "x"}]},
            "findings.0.severity",
        ),
        ("wr.contracts.gate_verdict", {"rationale": "too short"}, "rationale"),
        ("wr.contracts.gate_verdict", {"version": 2}, "version"),
        ("wr.contracts.coding_handoff", {"keyDecisions": ["x" * 201]}, "keyDecisions.0"),
        ("wr.contracts.coding_handoff", {"filesChanged": ...}, "filesChanged"),
        ("wr.contracts.discovery_handoff", {"confidenceBand": "certain"}, "confidenceBand"),
        ("wr.contracts.shaping_handoff", {"appetite": "a" * 101}, "appetite"),
        (
            "wr.contracts.differentiation_handoff",
            {"generatedAt": "2026-01-01T00:00:00+02:00"},
            "generatedAt",
        ),
        (
            "wr.contracts.differentiation_handoff",
            {"shapingHandoff__evidenceTopK": ["not-a-uuid"]},
            "shapingHandoff.evidenceTopK.0",
        ),
        (
            "wr.contracts.differentiation_handoff",
            {"shapingHandoff__constraints__teamSize": 0},
            "shapingHandoff.constraints.teamSize",
        ),
        ("wr.contracts.loop_control", {"decision": "maybe"}, "decision"),
        ("wr.contracts.loop_control", {"loopId": "Has Spaces"}, "loopId"),
    ],
)
def test_contracts_reject_what_they_should(ref: str, changes: dict[str, Any], where: str) -> None:
    issues = CONTRACTS[ref].issues(_with(ref, **changes))
    assert any(issue.startswith(f"{where}:") for issue in issues), issues


def test_review_findings_keep_extra_fields_and_nested_handoff_objects_drop_them() -> None:
    review = CONTRACTS[REVIEW_VERDICT_CONTRACT]
    finding = {"severity": "major", "summary": "Broken", "file": "a.py", "startLine": 3}
    assert review.issues(_with(REVIEW_VERDICT_CONTRACT, findings=[finding])) == []
    ref = "wr.contracts.differentiation_handoff"
    assert CONTRACTS[ref].issues(_with(ref, evidenceFreshness__extra="kept out")) == []


def test_the_first_artifact_of_the_kind_decides() -> None:
    spec = CONTRACTS[REVIEW_VERDICT_CONTRACT]
    good, bad = spec.template(None), {"kind": "wr.review_verdict"}
    other = {"kind": "wr.gate_verdict"}
    assert check_contract(spec, [other, good, bad], required=True).status == "satisfied"
    assert check_contract(spec, [bad, good], required=True).status == "invalid"
    assert check_contract(spec, [other], required=True).status == "missing"
    assert check_contract(spec, [], required=False).status == "satisfied"


def test_validation_knows_every_registered_contract() -> None:
    assert contract("wr.contracts.nope") is None
    for ref in KNOWN_CONTRACTS:
        wf = make_workflow([step("one", outputContract={"contractRef": ref})])
        assert [p for p in validate_workflow(wf) if p.code == "UNKNOWN_CONTRACT"] == []
    wf = make_workflow([step("one", outputContract={"contractRef": "wr.contracts.nope"})])
    (problem,) = [p for p in validate_workflow(wf) if p.code == "UNKNOWN_CONTRACT"]
    assert "wr.contracts.review_verdict" in problem.fix
