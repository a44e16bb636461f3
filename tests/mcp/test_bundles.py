"""export_session / import_session through the in-memory MCP client: a session moves to
another data directory and continues with fresh tokens; bad bundles come back as BUNDLE_*
envelopes and write nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import pytest
from mcp import Client

from tests.engine.conftest import make_engine
from tests.engine.helpers import tree_digest
from tests.mcp.conftest import advance_args, fail, ok
from workrail.bundle.errors import ErrorCode
from workrail.core.errors import CATALOG
from workrail.engine.api import Engine
from workrail.mcp import build_server
from workrail.mcp.bundles import BundleToolCode

pytestmark = pytest.mark.anyio


@pytest.fixture
def other_dir(tmp_path: Path) -> Path:
    path = tmp_path / "other"
    path.mkdir()
    return path


@pytest.fixture
async def other(other_dir: Path) -> AsyncIterator[Client]:
    """A second server on its own data directory (another machine, as far as tokens go)."""
    async with Client(build_server(make_engine(other_dir)), raise_exceptions=True) as c:
        yield c


async def _mid_run(client: Client, engine: Engine) -> tuple[str, dict[str, Any]]:
    start = await ok(client, "start_workflow", {"workflowId": "probe-flow"})
    at_build = await ok(client, "continue_workflow", advance_args(start, "the plan"))
    sid = engine.deps.codec.parse_state(at_build["stateToken"]).unwrap().session_id
    return sid, at_build


async def test_export_then_import_elsewhere_continues_to_the_same_step(
    client: Client, other: Client, engine: Engine
) -> None:
    sid, at_build = await _mid_run(client, engine)
    exported = await ok(client, "export_session", {"sessionId": sid})
    summary = exported["summary"]
    assert summary["sessionId"] == sid
    assert summary["complete"] is True
    assert summary["eventCount"] == len(exported["bundle"]["session"]["events"]) > 0
    assert "salvage" not in summary

    imported = await ok(other, "import_session", {"bundle": exported["bundle"]})
    assert imported["sessionId"] == sid
    assert imported["renamed"] is False
    (run,) = imported["runs"]
    assert run["pending"]["stepId"] == "build"
    assert imported["nextIntent"] == run["nextIntent"]
    assert imported["nextCall"] == run["nextCall"]

    there = await ok(other, "continue_workflow", advance_args(imported, "built"))
    here = await ok(client, "continue_workflow", advance_args(at_build, "built"))
    assert there["pending"] == here["pending"]
    assert there["pending"]["stepId"] == "verify"


async def test_import_as_text_into_the_same_store_is_renamed(
    client: Client, engine: Engine
) -> None:
    sid, _ = await _mid_run(client, engine)
    exported = await ok(client, "export_session", {"sessionId": sid})
    imported = await ok(client, "import_session", {"bundle": json.dumps(exported["bundle"])})
    assert imported["renamed"] is True
    assert imported["originalSessionId"] == sid
    assert imported["sessionId"] != sid
    copy = await ok(client, "continue_workflow", advance_args(imported, "built"))
    assert copy["pending"]["stepId"] == "verify"


async def test_corrupt_tail_export_carries_the_salvage_marker(
    client: Client, engine: Engine, data_dir: Path
) -> None:
    sid, at_build = await _mid_run(client, engine)
    await ok(client, "continue_workflow", advance_args(at_build, "built"))
    segment = max((data_dir / "sessions" / sid / "events").iterdir())
    raw = bytearray(segment.read_bytes())
    raw[10] ^= 0x01
    segment.write_bytes(bytes(raw))
    fresh = build_server(make_engine(data_dir))
    async with Client(fresh, raise_exceptions=True) as c:
        exported = await ok(c, "export_session", {"sessionId": sid})
    summary = exported["summary"]
    assert summary["complete"] is False
    assert summary["salvage"]["reason"]["code"] == "digest_mismatch"
    assert exported["bundle"]["salvage"] == summary["salvage"]


async def test_export_of_an_unknown_session(client: Client) -> None:
    env = await fail(
        client, "export_session", {"sessionId": "sess_" + "a" * 26}, "EXPORT_BUILD_FAILED"
    )
    assert env["retry"] == {"kind": "not_retryable"}
    assert env["details"]["path"] == "sess_" + "a" * 26
    assert env["details"]["suggestion"]


async def test_export_rejects_a_non_session_id(client: Client) -> None:
    env = await fail(client, "export_session", {"sessionId": "../etc"}, "VALIDATION_ERROR")
    assert "session id" in env["details"]["validationErrors"][0]["message"]


async def _bundle(client: Client, engine: Engine) -> dict[str, Any]:
    sid, _ = await _mid_run(client, engine)
    exported = await ok(client, "export_session", {"sessionId": sid})
    bundle: dict[str, Any] = exported["bundle"]
    return bundle


async def test_import_errors_are_bundle_envelopes_and_write_nothing(
    client: Client, other: Client, engine: Engine, other_dir: Path
) -> None:
    bundle = await _bundle(client, engine)
    before = tree_digest(other_dir)

    env = await fail(other, "import_session", {"bundle": "{not json"}, "BUNDLE_INVALID_FORMAT")
    assert env["retry"] == {"kind": "not_retryable"}
    assert set(env["details"]) >= {"path", "suggestion"}

    newer = {**bundle, "bundleSchemaVersion": 2}
    env = await fail(other, "import_session", {"bundle": newer}, "BUNDLE_UNSUPPORTED_VERSION")
    assert env["details"]["path"] == "bundleSchemaVersion"

    tampered = json.loads(json.dumps(bundle))
    for event in tampered["session"]["events"]:
        payload = event["data"].get("payload", {})
        if payload.get("payloadKind") == "notes":
            payload["notesMarkdown"] = "rewritten history"
    env = await fail(other, "import_session", {"bundle": tampered}, "BUNDLE_INTEGRITY_FAILED")
    assert env["details"]["path"].startswith("integrity/")
    assert "unmodified" in env["details"]["suggestion"]

    snapshots = dict(bundle["session"]["snapshots"])
    snapshots.popitem()
    missing = {**bundle, "session": {**bundle["session"], "snapshots": snapshots}}
    env = await fail(other, "import_session", {"bundle": missing}, "BUNDLE_INTEGRITY_FAILED")

    assert tree_digest(other_dir) == before


async def test_import_argument_must_be_object_or_string(client: Client) -> None:
    env = await fail(client, "import_session", {"bundle": 7}, "VALIDATION_ERROR")
    (issue,) = env["details"]["validationErrors"]
    assert issue == {"path": "bundle", "message": "Expected object or string, received number"}


def test_bundle_codes_are_one_closed_set() -> None:
    """The envelope's Literal is exactly the bundle layer's codes, so neither can drift."""
    codes = set(get_args(BundleToolCode))
    assert codes == set(get_args(ErrorCode))
    assert {c.split("_")[0] for c in codes} == {"BUNDLE", "EXPORT", "IMPORT"}
    assert all(CATALOG[code].family == "bundle" for code in codes)


async def test_export_by_state_token_names_the_same_session(client: Client, engine: Engine) -> None:
    sid, at_build = await _mid_run(client, engine)
    by_token = await ok(client, "export_session", {"stateToken": at_build["stateToken"]})
    by_id = await ok(client, "export_session", {"sessionId": sid})
    assert by_token["summary"]["sessionId"] == sid
    assert by_token["bundle"]["session"] == by_id["bundle"]["session"]


async def test_export_needs_exactly_one_of_session_id_and_state_token(
    client: Client, engine: Engine
) -> None:
    sid, at_build = await _mid_run(client, engine)
    both = {"sessionId": sid, "stateToken": at_build["stateToken"]}
    await fail(client, "export_session", both, "VALIDATION_ERROR")
    await fail(client, "export_session", {}, "VALIDATION_ERROR")
    token = at_build["stateToken"]
    tampered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    await fail(client, "export_session", {"stateToken": tampered}, "TOKEN_BAD_SIGNATURE")
