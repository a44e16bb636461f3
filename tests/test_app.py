"""The composition root's workflow catalog: cached until a source file changes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

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


def _catalog(tmp_path: Path, custom: Path) -> DiscoveredCatalog:
    """The catalog of the workflows in `custom` alone (no bundled ones)."""
    return DiscoveredCatalog(
        DiscoveryConfig(
            home=tmp_path / "home",
            cwd=tmp_path,
            env={"WORKFLOW_STORAGE_PATH": str(custom), "WORKFLOW_INCLUDE_BUNDLED": "false"},
            bundled_dir=None,
        )
    )


def test_catalog_is_reused_until_a_file_changes(tmp_path: Path) -> None:
    custom = tmp_path / "wf"
    custom.mkdir()
    (custom / "a.json").write_text(_workflow("alpha"))
    catalog = _catalog(tmp_path, custom)
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
    assert entry is not None
    assert entry.definition is not None
    assert entry.definition["steps"][0]["prompt"] == "Do it differently."

    (custom / "b.json").unlink()
    assert catalog.get("beta") is None


def test_an_invalid_file_is_answered_as_invalid_not_unknown(tmp_path: Path) -> None:
    """The engine hears which file defines the id and what is wrong with it, so it can
    answer WORKFLOW_INVALID rather than NOT_FOUND; a valid definition still wins."""
    custom = tmp_path / "wf"
    custom.mkdir()
    (custom / "broken.json").write_text(json.dumps({"id": "broken", "steps": []}))
    catalog = _catalog(tmp_path, custom)
    entry = catalog.get("broken")
    assert entry is not None
    assert entry.definition is None
    assert entry.source_path == str(custom / "broken.json")
    assert entry.problems
    assert all(p["path"].startswith("$") for p in entry.problems)
    (listed,) = catalog.entries()
    assert listed.source_path == entry.source_path
    assert listed.problems == entry.problems
    assert catalog.get("nope") is None

    (custom / "fixed.json").write_text(_workflow("broken"))
    fixed = catalog.get("broken")
    assert fixed is not None
    assert fixed.definition is not None
    assert fixed.problems == ()


def test_a_store_opened_by_location_honours_allow_insecure_keys(tmp_path: Path) -> None:
    """`workrail migrate` opens both stores by location: the configuration's
    allow_insecure_keys applies there as it does to the configured store."""
    from workrail.app import open_backend_at
    from workrail.store.local.keyring import keyring_path, load_or_create_keyring

    data = tmp_path / "data"
    made = load_or_create_keyring(data)
    keyring_path(data).chmod(0o644)
    refused = open_backend_at(data).unwrap().keyring.load()
    assert refused.failure().code == "KEYRING_INSECURE"
    allowed = open_backend_at(data, allow_insecure_keys=True).unwrap().keyring.load()
    assert allowed.unwrap() == made


def test_the_console_shares_the_engines_workflow_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One catalog, so the console's pages and the engine's use cases never disagree on
    which workflows exist, and sources are discovered once."""
    import workrail.console.web
    from tests.console.conftest import console_config
    from workrail.app import build_console, open_backend
    from workrail.console.deps import ConsoleDeps
    from workrail.console.security import Guard

    seen: list[ConsoleDeps] = []
    real = workrail.console.web.build_console

    def capture(deps: ConsoleDeps) -> Any:
        seen.append(deps)
        return real(deps)

    monkeypatch.setattr(workrail.console.web, "build_console", capture)
    config = console_config(tmp_path / "data")
    backend = open_backend(config).unwrap()
    build_console(config, backend, Guard.for_bind("127.0.0.1"), "test").unwrap()
    (deps,) = seen
    assert getattr(deps.catalog, "__self__", None) is deps.engine.deps.catalog


def test_a_memory_store_url_opens_a_backend_that_keeps_nothing_on_disk(tmp_path: Path) -> None:
    """The composition root is the one place that turns `memory://` into a backend: a
    whole start works over it, and the data directory stays empty."""
    from workrail.app import build_engine, open_backend
    from workrail.config import load_config

    data = tmp_path / "data"
    env = {"WORKRAIL_STORE_URL": "memory://", "WORKRAIL_DATA_DIR": str(data)}
    config = load_config(env, home=tmp_path, cwd=tmp_path).unwrap()
    backend = open_backend(config).unwrap()
    assert backend.location.startswith("memory://")
    engine = build_engine(config, backend).unwrap()
    listed = engine.list_workflows().unwrap()
    assert isinstance(listed, dict)
    assert listed["workflows"]
    started = engine.start_workflow(listed["workflows"][0]["workflowId"]).unwrap()
    assert backend.sessions.exists(started["sessionId"]).unwrap() is True
    assert not data.exists()
    other = open_backend(config).unwrap()  # another process: its own, empty store
    assert other.sessions.exists(started["sessionId"]).unwrap() is False
