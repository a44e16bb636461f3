"""The construct table: docs/workflows.md lists every construct `workrail validate` reports,
with the same release, and a construct is detected in a file that uses it."""

from __future__ import annotations

import json
from pathlib import Path

from workrail.workflow.language import CONSTRUCTS, constructs_used, uses_only_v14

ROOT = Path(__file__).resolve().parents[2]
V3 = Path(__file__).parent / "fixtures" / "v3"


def test_the_docs_table_lists_every_construct_with_its_release() -> None:
    text = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    for construct in CONSTRUCTS:
        row = f"| `{construct.key}` | {construct.label} | {construct.since} |"
        assert row in text, row


def test_constructs_are_detected() -> None:
    blocks = json.loads((V3 / "blocks.json").read_text())
    keys = {c.key for c in constructs_used(blocks)}
    assert {"steps", "promptBlocks", "features", "refs"} <= keys
    assert "templateCall" not in keys
    bundled = json.loads((ROOT / "workflows" / "code-review.json").read_text())
    assert uses_only_v14(bundled)
    assert not uses_only_v14(blocks)
