"""What the console needs, handed over by the composition root: the store's ports, the
engine (whose use cases list, follow and tidy sessions), the workflow catalog, the guard's
per-start secrets and the version to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workrail.console.security import Guard
from workrail.engine.api import Backend, Engine
from workrail.workflow.catalog import Catalog


@dataclass(frozen=True)
class ConsoleDeps:
    backend: Backend
    engine: Engine
    catalog: Callable[[], Catalog]
    guard: Guard
    app_version: str
