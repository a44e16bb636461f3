"""The composition root: builds the engine from configuration (data directory, workflow
sources). The only place that chooses concrete backends."""

from __future__ import annotations

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


class DiscoveredCatalog:
    """Workflow sources re-scanned on every lookup, so new or edited files are picked up
    without a restart (runs already started use their pinned copy)."""

    def __init__(self, config: DiscoveryConfig | None = None) -> None:
        self._config = config

    def catalog(self) -> Catalog:
        return discover(self._config)

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
