"""tools/list is a contract: a checked-in snapshot makes every schema or description change
deliberate. Regenerate with UPDATE_SNAPSHOTS=1 after reviewing the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"


async def test_tools_list_matches_snapshot(full_client: Client) -> None:
    listed = await full_client.list_tools()
    actual = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    text = json.dumps(actual, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8")


async def test_tools_have_reference_names_annotations_and_strict_schemas(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == [
        "list_workflows",
        "inspect_workflow",
        "start_workflow",
        "continue_workflow",
        "checkpoint_workflow",
        "export_session",
        "import_session",
        "resume_session",
    ]
    expected = {  # (readOnly, destructive, idempotent), spec 00 §3; then issue #6's two
        "list_workflows": (True, False, True),
        "inspect_workflow": (True, False, True),
        "start_workflow": (False, False, False),
        "continue_workflow": (False, False, True),
        "checkpoint_workflow": (False, False, True),
        "export_session": (True, False, True),
        "import_session": (False, False, False),
        "resume_session": (True, False, True),  # issue #11: read-only, idempotent
    }
    for name, tool in tools.items():
        a = tool.annotations
        assert a is not None
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == expected[name]
        assert tool.input_schema["additionalProperties"] is False
        assert tool.description
    # A continueToken call needs neither intent nor stateToken, so continue_workflow
    # advertises no required field; without continueToken the validator still requires
    # both, with the reference's messages (tests/mcp/test_tools.py).
    assert "required" not in tools["continue_workflow"].input_schema
    assert tools["start_workflow"].input_schema["required"] == ["workflowId"]


async def test_effect_checkpoint_is_listed_only_with_a_fence_service(
    client: Client, full_client: Client
) -> None:
    without = {t.name for t in (await client.list_tools()).tools}
    with_fence = [t.name for t in (await full_client.list_tools()).tools]
    assert "effect_checkpoint" not in without
    assert with_fence[-1] == "effect_checkpoint"
    assert set(with_fence[:-1]) == without
