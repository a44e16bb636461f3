from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from workrail.engine.api import Engine
from workrail.engine.catalog import CatalogEntry, WorkflowCatalog
from workrail.engine.deps import EngineDeps
from workrail.store.local.backend import LocalBackend
from workrail.store.memory import MemoryBackend
from workrail.store.ports import Backend
from workrail.tokens import TokenCodec


class DirCatalog:
    """Every `*.json` of one directory, as the project source the reference used."""

    def __init__(self, directory: Path) -> None:
        self._entries = {}
        for path in sorted(directory.glob("*.json")):
            definition = json.loads(path.read_text())
            self._entries[definition["id"]] = CatalogEntry(
                workflow_id=definition["id"],
                source_kind="project",
                source_ref="/srv/workrail/workflows",
                definition=definition,
                name=definition["name"],
                description=definition["description"],
                version=definition["version"],
            )

    def entries(self) -> Sequence[CatalogEntry]:
        return list(self._entries.values())

    def get(self, workflow_id: str) -> CatalogEntry | None:
        return self._entries.get(workflow_id)


def make_engine(data_dir: Path, workflows: Path | None = None) -> Engine:
    return engine_over(LocalBackend.open(data_dir), workflows)


def memory_engine(
    workflows: Path | None = None, *, catalog: WorkflowCatalog | None = None
) -> Engine:
    """The engine over a fresh in-memory backend: for tests about the engine or a
    transport, not about storage (nothing touches the disk, no fsync)."""
    return engine_over(MemoryBackend.open(lambda: datetime.now(UTC)), workflows, catalog=catalog)


def counter_entropy(seed: str) -> Callable[[int], bytes]:
    """Reproducible 'random' bytes: the same seed gives the same ids in the same order."""
    count = 0

    def entropy(n: int) -> bytes:
        nonlocal count
        count += 1
        return hashlib.sha256(f"{seed}:{count}".encode()).digest()[:n]

    return entropy


def engine_over(
    backend: Backend,
    workflows: Path | None = None,
    entropy: Callable[[int], bytes] | None = None,
    *,
    catalog: WorkflowCatalog | None = None,
) -> Engine:
    """The engine over any backend (optionally with reproducible ids, or another catalog
    than one directory's files as they are)."""
    deps = EngineDeps.over(
        backend,
        catalog or DirCatalog(workflows or REFERENCE / "workflows"),
        TokenCodec(backend.keyring.load().unwrap()),
    )
    if entropy is not None:
        deps = dataclasses.replace(deps, entropy=entropy)
    return Engine(deps)


def engine_for(request: pytest.FixtureRequest) -> Engine:
    """On the in-memory store, unless the test looks at the data directory (asks for
    `data_dir`): then on the files backend there. A test of the engine's logic needs no
    fsync'd files; one about what lands on disk says so by asking for the directory."""
    if "data_dir" in request.fixturenames:
        data_dir: Path = request.getfixturevalue("data_dir")
        return make_engine(data_dir)
    return memory_engine()


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Engine:
    return engine_for(request)
