"""Golden values: the workflowHash, preview hash and snapshot refs must equal the
reference's bytes, or runs pinned by one implementation cannot be read by the other."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.workflow.wf_helpers import load_fixture_workflow
from workrail.core.ids import workflow_hash_ref
from workrail.core.snapshot import complete_snapshot
from workrail.workflow import (
    Advanced,
    AdvanceRequest,
    Blocked,
    compile_definition,
    decide_advance,
    parse_pinned,
    pin_workflow,
    preview_workflow,
    start,
)

PROBE_HASH = "sha256:5355dac5bead5f869d68b02723ceaef551e0acd397d6973e14fc7959d7110c09"
PREVIEW_HASHES = {
    "probe-flow": "sha256:de1b4bc829f5c23adcbe3ffd858b21f220e9ebecb550a76075875dbeaae14e54",
    "branch-flow": "sha256:b1a15315ac8b061ef3fd637d849be32b77c29502098fc998bfdd19b9dcb33085",
    "loopctl-flow": "sha256:3bd6925893e4c1eed5ccac15cebb6300b966d9548fb0b1a9a60013b47ab721d0",
    "val-flow": "sha256:4097fb079469ae3adec0c24382309e21b09fff7c9f6b012c8bc4368222cdd0e4",
}
INITIAL = "sha256:4748bddf79af5c179e3c59cbcb86d35ab387c10362eff5b085dd62039384027e"
AFTER_PLAN = "sha256:32553730a5a824a7661b1e55dbbd6ee6af402c422dd58b8ae6f670175df745da"
COMPLETE = "sha256:e5839a07041b0c9b886ee2eec70b0f44a8c279b8458d7ee8b0e9b3eb97b0532a"
ATTEMPT_1 = "attempt_klnxots3oln5nsrbniarnqfm6i"


def test_probe_flow_workflow_hash_and_ref(spec_fixtures: Path) -> None:
    pinned = pin_workflow(load_fixture_workflow(spec_fixtures, "probe-flow"))
    assert pinned.workflow_hash() == PROBE_HASH
    assert workflow_hash_ref(PROBE_HASH) == "wf_knk5vrn6vvpynhliwatshtvo6u"


@pytest.mark.parametrize("name", sorted(PREVIEW_HASHES))
def test_preview_hashes_match_list_workflows(spec_fixtures: Path, name: str) -> None:
    preview = preview_workflow(load_fixture_workflow(spec_fixtures, name))
    assert preview.workflow_hash() == PREVIEW_HASHES[name]


def test_pinned_bytes_equal_reference_files(spec_fixtures: Path) -> None:
    pinned_dir = spec_fixtures / "data" / "workflows" / "pinned"
    by_id = {"probe-flow": "probe-flow", "val-flow": "val-flow"}
    files = sorted(pinned_dir.glob("*.json"))
    assert files
    for file in files:
        stored = json.loads(file.read_bytes())
        mine = pin_workflow(load_fixture_workflow(spec_fixtures, by_id[stored["workflowId"]]))
        assert mine.canonical_bytes() == file.read_bytes()
        assert file.name == "sha256_" + mine.workflow_hash().removeprefix("sha256:") + ".json"
        assert parse_pinned(stored).unwrap() == mine


def test_hash_ignores_formatting_and_key_order(spec_fixtures: Path) -> None:
    source = load_fixture_workflow(spec_fixtures, "probe-flow")
    reordered = json.loads(json.dumps(source, indent=7, sort_keys=True))
    reordered["steps"] = [dict(reversed(list(s.items()))) for s in reordered["steps"]]
    assert pin_workflow(reordered).workflow_hash() == PROBE_HASH


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(description=d["description"] + " "),
        lambda d: d["steps"][1].update(prompt="Build it differently."),
        lambda d: d["steps"][2].update(title="Check"),
        lambda d: d.update(metaGuidance=["Be careful."]),
        lambda d: d["steps"][0].update(runCondition={"var": "x"}),
        lambda d: d["steps"].reverse(),
    ],
)
def test_hash_changes_when_visible_content_changes(spec_fixtures: Path, mutate: object) -> None:
    source = copy.deepcopy(load_fixture_workflow(spec_fixtures, "probe-flow"))
    mutate(source)  # type: ignore[operator]
    assert pin_workflow(source).workflow_hash() != PROBE_HASH


def test_probe_flow_snapshot_refs(spec_fixtures: Path) -> None:
    wf = compile_definition(load_fixture_workflow(spec_fixtures, "probe-flow")).unwrap()
    first = start(wf, {"ticket": "T-1", "n": 1}).unwrap().snapshot()
    assert first.snapshot_ref() == INITIAL
    snapshot = first
    refs = []
    for _ in range(3):
        decision = decide_advance(
            wf, snapshot, AdvanceRequest(attempt_id=ATTEMPT_1, context={}, notes_markdown="n")
        ).unwrap()
        assert isinstance(decision, Advanced)
        snapshot = decision.snapshot
        refs.append(snapshot.snapshot_ref())
    assert refs[0] == AFTER_PLAN
    assert refs[2] == COMPLETE == complete_snapshot().snapshot_ref()


def test_reference_snapshot_files_round_trip(spec_fixtures: Path) -> None:
    from workrail.core.snapshot import parse_snapshot

    for file in sorted((spec_fixtures / "data" / "snapshots").glob("*.json")):
        snapshot = parse_snapshot(json.loads(file.read_bytes())).unwrap()
        assert snapshot.canonical_bytes() == file.read_bytes()
        assert file.name == "sha256_" + snapshot.snapshot_ref().removeprefix("sha256:") + ".json"


def test_val_flow_blocked_snapshots_match_reference(spec_fixtures: Path) -> None:
    """The blocked-attempt snapshots of the val-flow session, recomputed from its attempts."""
    wf = compile_definition(load_fixture_workflow(spec_fixtures, "val-flow")).unwrap()
    root = start(wf, {}).unwrap().snapshot()
    assert root.snapshot_ref() == (
        "sha256:d50392978cd3a165e16cf1f5cdd431b500a52b68e42a6cd37f1511ad88a0e630"
    )
    first = decide_advance(
        wf, root, AdvanceRequest(attempt_id=ATTEMPT_1, context={}, notes_markdown="not yet")
    ).unwrap()
    assert isinstance(first, Blocked)
    assert first.snapshot.snapshot_ref() == (
        "sha256:afb489b4015cdff34a0212f37fb3dd2f22815fbafa616d8dabe2cca1011d4668"
    )
    assert first.validation.model_dump(by_alias=True) == {
        "contractRef": "wr.validationCriteria",
        "result": {
            "valid": False,
            "issues": ["Notes must contain DONE"],
            "suggestions": ["Review validation criteria and adjust output accordingly."],
        },
    }
    retry = decide_advance(
        wf,
        first.snapshot,
        AdvanceRequest(
            attempt_id="attempt_wn624bzkxfddf4iwdotoe37d3q", context={}, notes_markdown="x"
        ),
    ).unwrap()
    assert retry.snapshot.snapshot_ref() == (
        "sha256:7ed7b7a6f9df293cf1ae16ee078c8b8a4dd17ed269db996bcd51fb98a1f0df1c"
    )
    passed = decide_advance(
        wf,
        retry.snapshot,
        AdvanceRequest(
            attempt_id="attempt_zvocr7f5z7fo3o4h3bgbkahszu", context={}, notes_markdown="all DONE"
        ),
    ).unwrap()
    assert isinstance(passed, Advanced)
    assert passed.snapshot.snapshot_ref() == (
        "sha256:94d13b63da0bd56f2d444c91cf88ac902d889a44c85e7ee19684d56553f2bc98"
    )
    assert passed.validation.contract_ref == "none"
    assert passed.validation.result.valid
    assert passed.record_recap
    missing = decide_advance(
        wf,
        passed.snapshot,
        AdvanceRequest(attempt_id="attempt_iejl6bsvblfwwfksl6odc4kvra", context={}),
    ).unwrap()
    assert isinstance(missing, Blocked)
    assert missing.snapshot.snapshot_ref() == (
        "sha256:3ba5ee987a7969eb0b068b8dbb03f9609791c048a099a08c85fe8c3acf21f2bb"
    )
    assert missing.validation.result.issues == [
        "Missing required output for contractRef=wr.validationCriteria"
    ]
