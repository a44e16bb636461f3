"""The published describe document is generated from the code and matches the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workrail.fence.contract import INPUT_ADAPTER, CheckpointOutput
from workrail.fence.describe import describe_document, describe_result

REFERENCE = Path(__file__).parent / "fixtures" / "opaque-workflow-checkpoint.describe.json"


def reference() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(REFERENCE.read_text())["result"]
    return result


def test_schemas_match_the_reference_exactly() -> None:
    mine, ref = describe_result(), reference()
    assert mine["input_schema"] == ref["input_schema"]
    assert mine["output_schema"] == ref["output_schema"]


def test_limits_errors_and_idempotency_match_the_reference() -> None:
    mine, ref = describe_result(), reference()
    assert mine["limits"] == ref["limits"]
    assert mine["execution"]["errors"] == ref["execution"]["errors"]
    assert mine["execution"]["idempotency"] == ref["execution"]["idempotency"]
    assert mine["endpoints"] == ref["endpoints"]
    for field in ("slug", "name", "version", "category", "mode", "summary", "side_effects"):
        assert mine[field] == ref[field]


def test_examples_validate_against_the_models() -> None:
    examples = describe_result()["examples"]
    assert examples == reference()["examples"]
    INPUT_ADAPTER.validate_python(examples["input"])
    CheckpointOutput.model_validate(examples["output"])


def test_document_shape() -> None:
    doc = describe_document(observed_at="2026-07-25T12:00:00.000Z")
    assert (doc["ok"], doc["tool"], doc["module_version"]) == (True, "workflow-checkpoint", "1.1.0")
    assert doc["meta"] == {"observed_at": "2026-07-25T12:00:00.000Z"}
