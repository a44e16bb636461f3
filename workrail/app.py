"""The composition root: the one place that turns a `WorkrailConfig` into concrete
backends, the engine and the fence service. Everything else receives what it needs from
here, as ports."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, cast

from returns.result import Failure, Result, Success

from workrail.config import MEMORY_URL, POSTGRES_SCHEMES, WorkrailConfig
from workrail.engine.api import Engine
from workrail.engine.catalog import CatalogEntry
from workrail.engine.deps import EngineDeps
from workrail.engine.signing import KeyringCodec
from workrail.probes.git import GitWorkspaceProbe
from workrail.store.local.backend import LocalBackend
from workrail.store.local.layout import Layout
from workrail.store.ports import Backend
from workrail.workflow.catalog import (
    ROUTINES_SUBDIR,
    Catalog,
    CompileCache,
    InvalidWorkflow,
    LoadedWorkflow,
)
from workrail.workflow.sources import DiscoveryConfig, discover

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from workrail.console.security import Guard
    from workrail.fence import FenceService


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
        source_definition=wf.source_definition,
    )


SourcesFingerprint = tuple[tuple[str, tuple[tuple[str, int, int], ...]], ...]


def sources_fingerprint(config: DiscoveryConfig) -> SourcesFingerprint:
    """(name, size, mtime) of every candidate file in every source directory and its
    `routines/` folder: one stat per file, so a catalog can be reused until a workflow or
    routine file is added, removed or edited."""
    result = []
    for source in config.sources():
        for directory in (source.directory, source.directory / ROUTINES_SUBDIR):
            files: list[tuple[str, int, int]] = []
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.name.endswith(".json"):
                            st = entry.stat()
                            files.append((entry.name, st.st_size, st.st_mtime_ns))
            except OSError:
                pass
            result.append((str(directory), tuple(sorted(files))))
    return tuple(result)


class DiscoveredCatalog:
    """Workflow sources, re-validated only when their files change, so new or edited
    files are picked up without a restart at the cost of a few stats per lookup (runs
    already started use their pinned copy). When a file changes, only contents not seen
    before are compiled again (`CompileCache`, keyed by each content's sha256)."""

    def __init__(self, config: DiscoveryConfig) -> None:
        self._config = config
        self._cached: tuple[SourcesFingerprint, Catalog] | None = None
        self._mutex = threading.Lock()
        self._compiled = CompileCache()

    def catalog(self) -> Catalog:
        fingerprint = sources_fingerprint(self._config)
        with self._mutex:
            if self._cached is not None and self._cached[0] == fingerprint:
                return self._cached[1]
        catalog = discover(self._config, self._compiled)
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
                rows.append(_invalid_entry(wid, bad))
        return rows

    def get(self, workflow_id: str) -> CatalogEntry | None:
        catalog = self.catalog()
        found = catalog.resolve(workflow_id)
        if isinstance(found, Success):
            return _entry(found.unwrap())
        # No valid definition: the first invalid file with the id (by precedence) says why.
        for bad in catalog.invalid:
            if bad.workflow_id == workflow_id:
                return _invalid_entry(workflow_id, bad)
        return None


def _invalid_entry(workflow_id: str, bad: InvalidWorkflow) -> CatalogEntry:
    return CatalogEntry(
        workflow_id=workflow_id,
        source_kind=bad.source.kind,
        source_ref=bad.source.ref,
        definition=None,
        name=bad.name or workflow_id,
        description=bad.description or "",
        version=bad.version or "",
        source_path=str(bad.path),
        problems=tuple(p.to_json() for p in bad.problems),
    )


StartupCode = Literal[
    "CONFIG_INVALID",
    "STORE_UNAVAILABLE",
    "KEYRING_CORRUPT",
    "KEYRING_IO_ERROR",
    "KEYRING_INSECURE",
    "STORAGE_FAULT",
    "FENCE_UNAVAILABLE",
]
"""Every code start-up can fail with (each in the catalogue, workrail/core/errors.py)."""
_KEYRING_CODES: Final[frozenset[str]] = frozenset(
    {
        "KEYRING_CORRUPT",
        "KEYRING_IO_ERROR",
        "KEYRING_INSECURE",
        "STORAGE_FAULT",
        "STORE_UNAVAILABLE",
    }
)


@dataclass(frozen=True)
class StartupError:
    """Why the application cannot start: one line for a person, and a code."""

    code: StartupCode
    message: str

    def __str__(self) -> str:
        return self.message


def open_backend(config: WorkrailConfig) -> Result[Backend, StartupError]:
    """The backend the configuration names: files in the data directory, PostgreSQL, or
    memory (for tests and demos: nothing is kept when the process exits)."""
    if config.store_url is None:
        return _local_backend(config.data_dir, config.allow_insecure_keys, existing=False)
    return open_backend_at(config.store_url)


def utc_now() -> datetime:
    """The clock: the engine's, and the one the in-memory backend stamps appends and
    content with."""
    return datetime.now(UTC)


def open_backend_at(
    location: str | Path, *, allow_insecure_keys: bool = False, existing: bool = False
) -> Result[Backend, StartupError]:
    """The backend at a postgresql:// URL, a new in-memory one for `memory://`, or the
    files backend over a data directory (for commands that use two stores at once, like
    `workrail migrate`). A data directory's keyring is checked as `open_backend` checks
    it: `allow_insecure_keys` (the configuration's) turns a keyring others can read into a
    logged warning. `existing`: a data directory must already hold a store (a store that
    is only read, so a mistyped path is refused rather than read as an empty store)."""
    if location == MEMORY_URL:
        from workrail.store.memory import MemoryBackend

        return Success(MemoryBackend.open(utc_now))
    if isinstance(location, str) and location.startswith(POSTGRES_SCHEMES):
        # Imported here: psycopg costs a server on files (and `workrail mcp`'s start) 60 ms.
        from workrail.store.postgres import open_postgres_backend

        opened = open_postgres_backend(location)
        if isinstance(opened, Failure):
            problem = opened.failure()
            return Failure(StartupError(problem.code, problem.message))
        backend: Backend = opened.unwrap()
        return Success(backend)
    directory = Path(location).expanduser().absolute()
    return _local_backend(directory, allow_insecure_keys, existing=existing)


def _local_backend(
    directory: Path, allow_insecure_keys: bool, *, existing: bool
) -> Result[Backend, StartupError]:
    """The files backend over `directory`; a path that cannot be one is refused here, by
    name, rather than later by whatever file inside it is touched first (the keyring)."""
    if directory.exists() and not directory.is_dir():
        return Failure(
            StartupError(
                "CONFIG_INVALID",
                f"The data directory {directory} is a file, not a directory: name a directory "
                "(--data-dir or WORKRAIL_DATA_DIR; a missing one is created).",
            )
        )
    if existing and not Layout(directory).holds_store():
        why = "it does not exist" if not directory.exists() else "no keys/ or sessions/ in it"
        return Failure(StartupError("CONFIG_INVALID", f"No WorkRail store at {directory} ({why})."))
    return Success(LocalBackend.open(directory, allow_insecure_keys=allow_insecure_keys))


def build_engine(config: WorkrailConfig, backend: Backend) -> Result[Engine, StartupError]:
    """The engine over `backend`, signing with the backend's keyring."""
    return _engine_with(config, backend, DiscoveredCatalog(config.discovery))


def _engine_with(
    config: WorkrailConfig, backend: Backend, catalog: DiscoveredCatalog
) -> Result[Engine, StartupError]:
    keyring = backend.keyring.load()
    if isinstance(keyring, Failure):
        error = keyring.failure()
        code = cast(StartupCode, error.code if error.code in _KEYRING_CODES else "KEYRING_IO_ERROR")
        return Failure(StartupError(code, f"Cannot load the token keyring: {error.message}"))
    deps = EngineDeps.over(
        backend,
        catalog,
        KeyringCodec(backend.keyring, keyring.unwrap()),
        probe=GitWorkspaceProbe(config.discovery.cwd),
        entropy=os.urandom,  # ids, bundle ids: the engine's one source of randomness
        clock=utc_now,  # the one clock: bundles' exportedAt, prune's cutoffs, lifecycle stamps
    )
    return Success(Engine(deps))


def open_fence(config: WorkrailConfig) -> Result[FenceService, StartupError]:
    """The effect-checkpoint service. It contacts no backend until a request arrives, so an
    unreachable Valkey/Redis is a retryable DEPENDENCY_UNAVAILABLE per call; only a bad
    setting or an unusable keys/fence.key fails here."""
    from workrail.fence import open_fence_service

    if config.fence_is_local_on_shared_store:
        logging.getLogger("workrail.fence").warning(
            "effect_checkpoint keeps its state in this server's data directory "
            "(WORKRAIL_FENCE_URL=sqlite) although the session store is shared: replicas do "
            "not see each other's claims; unset it to fence through the store's database"
        )
    try:
        return Success(
            open_fence_service(
                config.data_dir,
                config.fence_url,
                config.fence.limits,
                allow_insecure_key=config.allow_insecure_keys,
            )
        )
    except ValueError as exc:
        return Failure(StartupError("CONFIG_INVALID", f"effect_checkpoint: {exc}"))
    except OSError as exc:
        return Failure(StartupError("FENCE_UNAVAILABLE", f"effect_checkpoint: {exc}"))


def build_console(
    config: WorkrailConfig, backend: Backend, guard: Guard, app_version: str
) -> Result[Starlette, StartupError]:
    """The web console over `backend`: pages read through the engine's read use cases and
    the store's ports, write actions (archive, unarchive, delete, export) go through the
    engine behind `guard`'s per-start secret. Like every command, it loads the keyring (a
    brand-new store gets one); its pages never write."""
    from workrail.console.deps import ConsoleDeps
    from workrail.console.web import build_console as build_app

    catalog = DiscoveredCatalog(config.discovery)  # one, shared with the engine
    built = _engine_with(config, backend, catalog)
    if isinstance(built, Failure):
        return Failure(built.failure())
    return Success(
        build_app(ConsoleDeps(backend, built.unwrap(), catalog.catalog, guard, app_version))
    )
