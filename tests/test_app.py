"""The composition root's workflow catalog: cached until a source file changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from workrail.app import DiscoveredCatalog
from workrail.workflow.sources import DiscoveryConfig


def _workflow(wid: str, prompt: str = "Do it.") -> str:
    return json.dumps(
        {
            "id": wid,
            "name": wid.title(),
            "description": "A test workflow.",
            "version": "1.0.0",
            "steps": [{"id": "only", "title": "Only", "prompt": prompt}],
        }
    )


def test_catalog_is_reused_until_a_file_changes(tmp_path: Path) -> None:
    custom = tmp_path / "wf"
    custom.mkdir()
    (custom / "a.json").write_text(_workflow("alpha"))
    config = DiscoveryConfig(
        home=tmp_path / "home",
        cwd=tmp_path,
        env={"WORKFLOW_STORAGE_PATH": str(custom), "WORKFLOW_INCLUDE_BUNDLED": "false"},
        bundled_dir=None,
    )
    catalog = DiscoveredCatalog(config)
    first = catalog.catalog()
    assert catalog.catalog() is first
    assert [e.workflow_id for e in catalog.entries()] == ["alpha"]

    (custom / "b.json").write_text(_workflow("beta"))
    assert sorted(e.workflow_id for e in catalog.entries()) == ["alpha", "beta"]

    path = custom / "a.json"
    path.write_text(_workflow("alpha", "Do it differently."))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    entry = catalog.get("alpha")
    assert entry is not None and entry.definition is not None
    assert entry.definition["steps"][0]["prompt"] == "Do it differently."

    (custom / "b.json").unlink()
    assert catalog.get("beta") is None
