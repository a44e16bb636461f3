"""The composition root: builds the engine from configuration (data directory, workflow
sources). The only place that chooses concrete backends."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from returns.result import Success

from workrail.engine.api import Engine
from workrail.engine.catalog import CatalogEntry
from workrail.engine.deps import EngineDeps
from workrail.store.local.backend import LocalBackend
from workrail.store.local.layout import default_data_dir
from workrail.tokens import TokenCodec
from workrail.workflow.catalog import Catalog, LoadedWorkflow
from workrail.workflow.sources import DiscoveryConfig, discover


def _entry(wf: LoadedWorkflow) -> CatalogEntry:
    d = wf.definition
    return CatalogEntry(
        workflow_id=wf.workflow_id,
        source_kind=wf.source.kind,
        source_ref=wf.source.ref,
        definition=d,
        name=str(d.get("name", "")),
        description=str(d.get("description", "")),
        version=str(d.get("version", "")),
    )


SourcesFingerprint = tuple[tuple[str, tuple[tuple[str, int, int], ...]], ...]


def sources_fingerprint(config: DiscoveryConfig) -> SourcesFingerprint:
    """(name, size, mtime) of every candidate file in every source directory: one stat per
    file, so a catalog can be reused until a workflow file is added, removed or edited."""
    result = []
    for source in config.sources():
        files: list[tuple[str, int, int]] = []
        try:
            with os.scandir(source.directory) as entries:
                for entry in entries:
                    if entry.name.endswith(".json"):
                        st = entry.stat()
                        files.append((entry.name, st.st_size, st.st_mtime_ns))
        except OSError:
            pass
        result.append((str(source.directory), tuple(sorted(files))))
    return tuple(result)


class DiscoveredCatalog:
    """Workflow sources, re-validated only when their files change, so new or edited
    files are picked up without a restart at the cost of a few stats per lookup (runs
    already started use their pinned copy)."""

    def __init__(self, config: DiscoveryConfig | None = None) -> None:
        self._config = config or DiscoveryConfig.from_environment()
        self._cached: tuple[SourcesFingerprint, Catalog] | None = None
        self._mutex = threading.Lock()

    def catalog(self) -> Catalog:
        fingerprint = sources_fingerprint(self._config)
        with self._mutex:
            if self._cached is not None and self._cached[0] == fingerprint:
                return self._cached[1]
        catalog = discover(self._config)
        with self._mutex:
            self._cached = (fingerprint, catalog)
        return catalog

    def entries(self) -> Sequence[CatalogEntry]:
        catalog = self.catalog()
        rows = [_entry(wf) for wf in catalog.workflows.values()]
        known = {r.workflow_id for r in rows}
        for bad in catalog.invalid:
            wid = bad.workflow_id
            if wid is not None and wid not in known:
                known.add(wid)
                rows.append(
                    CatalogEntry(
                        workflow_id=wid,
                        source_kind=bad.source.kind,
                        source_ref=bad.source.ref,
                        definition=None,
                        name=bad.name or wid,
                        description=bad.description or "",
                        version=bad.version or "",
                    )
                )
        return rows

    def get(self, workflow_id: str) -> CatalogEntry | None:
        found = self.catalog().resolve(workflow_id)
        return _entry(found.unwrap()) if isinstance(found, Success) else None


@dataclass(frozen=True)
class AppConfig:
    data_dir: Path
    discovery: DiscoveryConfig

    @staticmethod
    def from_environment(env: Mapping[str, str] | None = None) -> AppConfig:
        config = DiscoveryConfig.from_environment()
        if env is not None:
            config = DiscoveryConfig(config.home, config.cwd, dict(env), config.bundled_dir)
        return AppConfig(default_data_dir(dict(env) if env is not None else None), config)


def build_engine(config: AppConfig) -> Engine:
    backend = LocalBackend.open(config.data_dir)
    deps = EngineDeps(
        sessions=backend.sessions,
        snapshots=backend.snapshots,
        pinned=backend.pinned,
        catalog=DiscoveredCatalog(config.discovery),
        codec=TokenCodec(backend.keyring()),
    )
    return Engine(deps)
