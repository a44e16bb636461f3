"""Event and manifest models (spec 20-events, 10-storage §3)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from workrail.core.canonical import jsonl_line
from workrail.core.events import EVENT_KINDS, parse_event
from workrail.core.manifest import MANIFEST_ADAPTER, segment_rel_path

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "data" / "sessions"

SESS = "sess_akuobhxpaal3j6jgnpsnzywq2u"
RUN = "run_eva2gbpdnp6w5b4fingjvifscy"
NODE = "node_xsxe3tfzahmw7va62jfizcjvlu"
CHILD = "node_wd6ntu6lsqwewpzsrrtwpzrej4"
ATTEMPT = "attempt_wen6s2hux7qbxfg2qwhtersgru"
EVT = "evt_vqq2qciru7aimb7dgcp43oauei"
DIGEST = "sha256:" + "ab" * 32

RUN_SCOPE = {"runId": RUN}
NODE_SCOPE = {"runId": RUN, "nodeId": NODE}

# kind -> (scope or None, minimal valid data)
MINIMAL: dict[str, tuple[dict[str, str] | None, dict[str, Any]]] = {
    "session_created": (None, {}),
    "observation_recorded": (
        None,
        {
            "key": "git_branch",
            "value": {"type": "short_string", "value": "main"},
            "confidence": "high",
        },
    ),
    "run_started": (
        RUN_SCOPE,
        {
            "workflowId": "probe-flow",
            "workflowHash": DIGEST,
            "workflowSourceKind": "bundled",
            "workflowSourceRef": "(bundled)",
        },
    ),
    "node_created": (
        NODE_SCOPE,
        {"nodeKind": "step", "parentNodeId": None, "workflowHash": DIGEST, "snapshotRef": DIGEST},
    ),
    "edge_created": (
        RUN_SCOPE,
        {
            "edgeKind": "acked_step",
            "fromNodeId": NODE,
            "toNodeId": CHILD,
            "cause": {"kind": "intentional_fork", "eventId": EVT},
        },
    ),
    "advance_recorded": (
        NODE_SCOPE,
        {
            "attemptId": ATTEMPT,
            "intent": "ack_pending",
            "outcome": {"kind": "advanced", "toNodeId": CHILD},
        },
    ),
    "validation_performed": (
        NODE_SCOPE,
        {
            "validationId": f"validation_{ATTEMPT}",
            "attemptId": ATTEMPT,
            "contractRef": "none",
            "result": {"valid": True, "issues": [], "suggestions": []},
        },
    ),
    "node_output_appended": (
        NODE_SCOPE,
        {
            "outputId": f"out_recap_{ATTEMPT}",
            "outputChannel": "recap",
            "payload": {"payloadKind": "notes", "notesMarkdown": "done"},
        },
    ),
    "preferences_changed": (
        NODE_SCOPE,
        {
            "changeId": EVT,
            "source": "system",
            "delta": [{"key": "autonomy", "value": "guided"}],
            "effective": {"autonomy": "guided", "riskPolicy": "conservative"},
        },
    ),
    "context_set": (RUN_SCOPE, {"contextId": EVT, "context": {}, "source": "initial"}),
    "decision_trace_appended": (
        NODE_SCOPE,
        {"traceId": EVT, "entries": [{"kind": "selected_next_step", "summary": "s"}]},
    ),
    "gap_recorded": (
        NODE_SCOPE,
        {
            "gapId": f"gap_{ATTEMPT}_0",
            "severity": "info",
            "reason": {"category": "unexpected", "detail": "invariant_violation"},
            "summary": "s",
            "resolution": {"kind": "unresolved"},
        },
    ),
    "capability_observed": (
        NODE_SCOPE,
        {
            "capObsId": EVT,
            "capability": "delegation",
            "status": "unknown",
            "provenance": {"kind": "manual_claim", "enforcementGrade": "weak", "detail": {}},
        },
    ),
    "divergence_recorded": (
        NODE_SCOPE,
        {"divergenceId": EVT, "reason": "efficiency_skip", "summary": "s"},
    ),
}


def raw_event(kind: str, **overrides: Any) -> dict[str, Any]:
    scope, data = MINIMAL[kind]
    raw: dict[str, Any] = {
        "v": 1,
        "kind": kind,
        "eventId": EVT,
        "eventIndex": 3,
        "sessionId": SESS,
        "dedupeKey": f"{kind}:{SESS}",
        "data": copy.deepcopy(data),
    }
    if scope is not None:
        raw["scope"] = dict(scope)
    raw.update(overrides)
    return raw


def round_trip(raw: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(jsonl_line(parse_event(raw).to_json()))
    return loaded


# --- reference data ---------------------------------------------------------------------


def _lines(pattern: str) -> list[tuple[str, bytes]]:
    found = []
    for path in sorted(SESSIONS.glob(pattern)):
        for n, line in enumerate(path.read_bytes().splitlines(keepends=True)):
            found.append((f"{path.parent.parent.name[:12]}/{path.name}:{n}", line))
    return found


EVENT_LINES = _lines("*/events/*.jsonl")
MANIFEST_LINES = _lines("*/manifest.jsonl")


def test_reference_fixture_is_present() -> None:
    assert len(EVENT_LINES) >= 60
    assert len(MANIFEST_LINES) >= 20


@pytest.mark.parametrize(("where", "line"), EVENT_LINES, ids=[w for w, _ in EVENT_LINES])
def test_reference_event_round_trips_byte_identically(where: str, line: bytes) -> None:
    event = parse_event(json.loads(line))
    assert jsonl_line(event.to_json()) == line


@pytest.mark.parametrize(("where", "line"), MANIFEST_LINES, ids=[w for w, _ in MANIFEST_LINES])
def test_reference_manifest_line_round_trips_byte_identically(where: str, line: bytes) -> None:
    record = MANIFEST_ADAPTER.validate_python(json.loads(line))
    assert jsonl_line(record.to_json()) == line


def test_reference_segment_names_follow_the_rule() -> None:
    for path in SESSIONS.glob("*/events/*.jsonl"):
        lines = path.read_bytes().splitlines()
        first = json.loads(lines[0])["eventIndex"]
        last = json.loads(lines[-1])["eventIndex"]
        assert f"events/{path.name}" == segment_rel_path(first, last)


def test_segment_rel_path_padding() -> None:
    assert segment_rel_path(4, 8) == "events/00000004-00000008.jsonl"
    assert segment_rel_path(0, 123456789) == "events/00000000-123456789.jsonl"


# --- every kind -------------------------------------------------------------------------


def test_minimal_examples_cover_the_closed_set() -> None:
    assert set(MINIMAL) == set(EVENT_KINDS)
    assert len(EVENT_KINDS) == 14


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_minimal_example_validates_and_round_trips(kind: str) -> None:
    raw = raw_event(kind)
    event = parse_event(raw)
    assert event.kind == kind
    assert round_trip(raw) == raw


def test_unknown_kind_is_rejected() -> None:
    raw = raw_event("session_created")
    raw["kind"] = "session_deleted"
    with pytest.raises(ValidationError):
        parse_event(raw)


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_wrong_version_is_rejected(kind: str) -> None:
    with pytest.raises(ValidationError):
        parse_event(raw_event(kind, v=2))


@pytest.mark.parametrize("field", ["v", "kind", "eventId", "eventIndex", "sessionId", "dedupeKey"])
def test_envelope_fields_are_required(field: str) -> None:
    raw = raw_event("run_started")
    del raw[field]
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_negative_event_index_is_rejected() -> None:
    with pytest.raises(ValidationError):
        parse_event(raw_event("session_created", eventIndex=-1))


# --- scope rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "scope"),
    [
        ("observation_recorded", {}),
        ("observation_recorded", RUN_SCOPE),
        ("session_created", RUN_SCOPE),
        ("session_created", NODE_SCOPE),
        ("run_started", {}),
        ("run_started", {"nodeId": NODE}),
        ("edge_created", {}),
        ("context_set", {"nodeId": NODE}),
        ("node_created", RUN_SCOPE),
        ("node_created", {"nodeId": NODE}),
        ("advance_recorded", RUN_SCOPE),
        ("node_output_appended", RUN_SCOPE),
        ("gap_recorded", RUN_SCOPE),
        ("capability_observed", RUN_SCOPE),
        ("divergence_recorded", RUN_SCOPE),
        ("preferences_changed", RUN_SCOPE),
        ("decision_trace_appended", RUN_SCOPE),
        ("validation_performed", RUN_SCOPE),
        ("run_started", {"runId": ""}),
        ("node_created", {"runId": RUN, "nodeId": ""}),
    ],
)
def test_wrong_scope_is_rejected(kind: str, scope: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        parse_event(raw_event(kind, scope=scope))


@pytest.mark.parametrize("kind", [k for k, (scope, _) in MINIMAL.items() if scope is not None])
def test_missing_scope_is_rejected(kind: str) -> None:
    raw = raw_event(kind)
    del raw["scope"]
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_run_scoped_kinds_accept_a_node_id() -> None:
    # edge_created / context_set only require runId; an extra nodeId is not forbidden
    parse_event(raw_event("context_set", scope=NODE_SCOPE))


# --- dedupe keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "Session_created:x", "a b", "a/b", "a.b", "a\n", "\u00e9", "a" * 257, "x" * 300],
)
def test_bad_dedupe_key_is_rejected(key: str) -> None:
    with pytest.raises(ValidationError):
        parse_event(raw_event("session_created", dedupeKey=key))


def test_dedupe_key_charset_and_max_length_accepted() -> None:
    parse_event(raw_event("session_created", dedupeKey="a" * 256))
    parse_event(raw_event("session_created", dedupeKey="az09_:>-"))


# --- optional fields and nulls ----------------------------------------------------------


def test_absent_optional_fields_are_omitted_not_null() -> None:
    out = parse_event(raw_event("node_output_appended")).to_json()
    assert "supersedesOutputId" not in out["data"]
    out = parse_event(raw_event("divergence_recorded")).to_json()
    assert "relatedStepId" not in out["data"]
    out = parse_event(raw_event("gap_recorded")).to_json()
    assert "evidenceRefs" not in out["data"]
    assert "resolvesGapId" not in out["data"]["resolution"]
    out = parse_event(raw_event("decision_trace_appended")).to_json()
    assert "refs" not in out["data"]["entries"][0]
    out = parse_event(raw_event("session_created")).to_json()
    assert "scope" not in out
    out = parse_event(raw_event("run_started")).to_json()
    assert out["scope"] == {"runId": RUN}
    assert b"null" not in jsonl_line(parse_event(raw_event("gap_recorded")).to_json())


def test_optional_fields_present_are_kept() -> None:
    raw = raw_event("node_output_appended")
    raw["data"]["supersedesOutputId"] = "out_recap_x"
    assert round_trip(raw) == raw
    raw = raw_event("divergence_recorded")
    raw["data"]["relatedStepId"] = "plan"
    assert round_trip(raw) == raw
    raw = raw_event("decision_trace_appended")
    raw["data"]["entries"][0]["refs"] = [
        {"kind": "step_id", "stepId": "build"},
        {"kind": "iteration", "value": 0},
    ]
    assert round_trip(raw) == raw


def test_null_parent_node_id_is_kept() -> None:
    line = jsonl_line(parse_event(raw_event("node_created")).to_json())
    assert b'"parentNodeId":null' in line


def test_parent_node_id_is_required() -> None:
    raw = raw_event("node_created")
    del raw["data"]["parentNodeId"]
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_artifact_content_null_is_kept() -> None:
    """`content` is the agent's artifact verbatim (any JSON value, 20-events §2); the input
    schema allows `artifacts: array of any`, so `null` is a legal artifact whose JCS bytes
    are `null`. Dropping it on re-serialisation changes the event bytes."""
    raw = raw_event("node_output_appended")
    raw["data"]["outputChannel"] = "artifact"
    raw["data"]["outputId"] = f"out_artifact_{ATTEMPT}_0"
    raw["data"]["payload"] = {
        "payloadKind": "artifact_ref",
        "sha256": "sha256:74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",
        "contentType": "application/json",
        "byteLength": 4,
        "content": None,
    }
    assert round_trip(raw) == raw


def test_artifact_content_object_is_kept() -> None:
    raw = raw_event("node_output_appended")
    raw["data"]["outputChannel"] = "artifact"
    raw["data"]["payload"] = {
        "payloadKind": "artifact_ref",
        "sha256": DIGEST,
        "contentType": "application/json",
        "byteLength": 2,
        "content": {"kind": "wr.loop_control", "decision": None},
    }
    assert round_trip(raw) == raw


# --- strict vs lenient payloads ---------------------------------------------------------


def test_validation_performed_payload_is_strict() -> None:
    raw = raw_event("validation_performed")
    raw["data"]["extra"] = 1
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw = raw_event("validation_performed")
    raw["data"]["result"]["extra"] = 1
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_trace_refs_are_strict() -> None:
    raw = raw_event("decision_trace_appended")
    raw["data"]["entries"][0]["refs"] = [{"kind": "step_id", "stepId": "a", "x": 1}]
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["entries"][0]["refs"] = [{"kind": "step_id", "stepId": "Bad Id"}]
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_node_created_keeps_unknown_keys() -> None:
    raw = raw_event("node_created")
    raw["data"]["futureField"] = {"b": 2, "a": None}
    raw["extraEnvelope"] = "kept"
    raw["scope"]["futureScope"] = "kept"
    out = round_trip(raw)
    assert out == raw
    assert out["data"]["futureField"] == {"b": 2, "a": None}


def test_blocked_outcome_is_still_accepted() -> None:
    raw = raw_event("advance_recorded")
    raw["data"]["outcome"] = {"kind": "blocked", "blockers": {"blockers": []}}
    assert round_trip(raw) == raw


# --- budgets and cross-field rules ------------------------------------------------------


def test_notes_over_4096_bytes_rejected() -> None:
    raw = raw_event("node_output_appended")
    raw["data"]["payload"]["notesMarkdown"] = "\u00e9" * 2049  # 4098 bytes, 2049 chars
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["payload"]["notesMarkdown"] = "\u00e9" * 2048  # exactly 4096 bytes
    parse_event(raw)
    raw["data"]["payload"]["notesMarkdown"] = ""
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_recap_requires_notes_payload() -> None:
    raw = raw_event("node_output_appended")
    raw["data"]["payload"] = {
        "payloadKind": "artifact_ref",
        "sha256": DIGEST,
        "contentType": "application/json",
        "byteLength": 2,
    }
    with pytest.raises(ValidationError):
        parse_event(raw)


@pytest.mark.parametrize("cause", ["intentional_fork", "non_tip_advance", "idempotent_replay"])
def test_checkpoint_edge_requires_checkpoint_created_cause(cause: str) -> None:
    raw = raw_event("edge_created")
    raw["data"]["edgeKind"] = "checkpoint"
    raw["data"]["cause"]["kind"] = cause
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["cause"]["kind"] = "checkpoint_created"
    parse_event(raw)


def test_preference_delta_rules() -> None:
    raw = raw_event("preferences_changed")
    raw["data"]["delta"] = []
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["delta"] = [
        {"key": "autonomy", "value": "guided"},
        {"key": "autonomy", "value": "full_auto_never_stop"},
    ]
    with pytest.raises(ValidationError):
        parse_event(raw)


def test_trace_entry_count_limits() -> None:
    raw = raw_event("decision_trace_appended")
    raw["data"]["entries"] = []
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["entries"] = [{"kind": "entered_loop", "summary": "s"}] * 26
    with pytest.raises(ValidationError):
        parse_event(raw)
    raw["data"]["entries"] = [{"kind": "entered_loop", "summary": "s"}] * 25
    parse_event(raw)


@pytest.mark.parametrize("field", ["workflowHash", "snapshotRef"])
def test_node_created_digests_are_checked(field: str) -> None:
    raw = raw_event("node_created")
    raw["data"][field] = "sha256:" + "AB" * 32
    with pytest.raises(ValidationError):
        parse_event(raw)


# --- manifest records -------------------------------------------------------------------


def _segment_closed(**overrides: Any) -> dict[str, Any]:
    raw = {
        "v": 1,
        "kind": "segment_closed",
        "manifestIndex": 0,
        "sessionId": SESS,
        "firstEventIndex": 0,
        "lastEventIndex": 3,
        "segmentRelPath": "events/00000000-00000003.jsonl",
        "sha256": DIGEST,
        "bytes": 10,
    }
    raw.update(overrides)
    return raw


@pytest.mark.parametrize("path", ["/etc/passwd", "\\x", "../x", "events/../../x", "a/..\\b", ""])
def test_segment_rel_path_must_not_escape(path: str) -> None:
    with pytest.raises(ValidationError):
        MANIFEST_ADAPTER.validate_python(_segment_closed(segmentRelPath=path))


def test_manifest_record_kinds() -> None:
    record = MANIFEST_ADAPTER.validate_python(_segment_closed())
    assert record.to_json() == _segment_closed()
    with pytest.raises(ValidationError):
        MANIFEST_ADAPTER.validate_python(_segment_closed(kind="segment_opened"))
    with pytest.raises(ValidationError):
        MANIFEST_ADAPTER.validate_python(_segment_closed(v=2))


def _observation(key: str, kind: str, value: str) -> dict[str, Any]:
    raw = raw_event("observation_recorded")
    raw["data"] = {"key": key, "value": {"type": kind, "value": value}, "confidence": "high"}
    return raw


@pytest.mark.parametrize(
    ("key", "kind", "value"),
    [
        ("git_branch", "short_string", "feat\x00x"),  # PostgreSQL text holds no NUL
        ("git_branch", "short_string", "feat\nx"),
        ("git_branch", "short_string", "\x1b[2Jfeat"),
        ("git_branch", "short_string", "feat\x7f"),
        ("git_branch", "short_string", "feat\x85"),  # a C1 control
        ("git_branch", "short_string", "feat\ud800"),  # a lone surrogate
        ("git_branch", "short_string", "b" * 81),
        ("git_branch", "short_string", "😀" * 41),  # 82 UTF-16 code units
        ("git_head_sha", "git_sha1", "a" * 39),
        ("git_head_sha", "git_sha1", "A" * 40),
        ("git_head_sha", "git_sha1", "a" * 39 + "\x00"),
        ("repo_root_hash", "sha256", "ab" * 32),
        ("repo_root_hash", "sha256", "sha256:" + "\x00" * 64),
    ],
)
def test_an_observation_value_must_fit_its_type(key: str, kind: str, value: str) -> None:
    with pytest.raises(ValidationError):
        parse_event(_observation(key, kind, value))


@pytest.mark.parametrize(
    ("key", "kind", "value"),
    [
        ("git_branch", "short_string", "feature/ünïcode-ß"),
        ("git_branch", "short_string", "b" * 80),
        ("git_branch", "short_string", "😀" * 40),  # 80 UTF-16 code units
        ("git_head_sha", "git_sha1", "0123456789abcdef" * 2 + "01234567"),
        ("repo_root_hash", "sha256", DIGEST),
    ],
)
def test_observation_values_that_fit_are_kept(key: str, kind: str, value: str) -> None:
    raw = _observation(key, kind, value)
    assert round_trip(raw) == raw
