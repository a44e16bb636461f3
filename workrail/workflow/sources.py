"""Imperative shell for workflow discovery: finds the directories and reads the files.

Everything decided about the files lives in `catalog.py`; this module only touches the
file system and the environment, and turns every I/O failure into a warning or an invalid
entry, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from workrail.workflow.errors import Problem
from workrail.workflow.source import SourceOrigin, WorkflowSource

if TYPE_CHECKING:
    from workrail.workflow.catalog import Catalog, FoundFile

# The catalog (JSON Schema, pydantic) is imported where files are read, not here: the
# configuration holds a DiscoveryConfig, and a server answers its first requests before
# it reads any workflow.

MAX_WORKFLOW_FILE_BYTES: Final = 2 * 1024 * 1024
_FALSE_WORDS: Final = frozenset({"0", "false", "no", "off"})
USER_SUBDIR: Final = Path(".workrail") / "workflows"
PROJECT_SUBDIR: Final = Path(".workrail") / "workflows"


def bundled_workflows_dir() -> Path | None:
    """Wheel installs carry `workrail/bundled_workflows/`; a source checkout has `workflows/`."""
    package_dir = Path(__file__).resolve().parent.parent
    for candidate in (package_dir / "bundled_workflows", package_dir.parent / "workflows"):
        if candidate.is_dir():
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class DiscoveryConfig:
    """Inputs of discovery; tests inject their own home, cwd and environment."""

    home: Path
    cwd: Path
    env: Mapping[str, str]
    bundled_dir: Path | None
    extra_dirs: tuple[Path, ...] = ()
    """Directories given on the command line; searched after WORKFLOW_STORAGE_PATH's."""

    def _enabled(self, name: str) -> bool:
        return self.env.get(name, "true").strip().lower() not in _FALSE_WORDS

    def sources(self) -> list[WorkflowSource]:
        """Directories to scan, highest precedence first."""
        found: list[WorkflowSource] = []
        raw = self.env.get("WORKFLOW_STORAGE_PATH", "")
        custom: list[Path] = []
        for part in (p for p in raw.split(os.pathsep) if p.strip()):
            directory = Path(part).expanduser()
            custom.append(directory if directory.is_absolute() else self.cwd / directory)
        for directory in self.extra_dirs:
            if directory not in custom:
                custom.append(directory)
        found.extend(WorkflowSource("custom", d, i) for i, d in enumerate(custom))
        if self._enabled("WORKFLOW_INCLUDE_PROJECT"):
            found.append(WorkflowSource("project", self.cwd / PROJECT_SUBDIR))
        if self._enabled("WORKFLOW_INCLUDE_USER"):
            found.append(WorkflowSource("user", self.home / USER_SUBDIR))
        if self._enabled("WORKFLOW_INCLUDE_BUNDLED") and self.bundled_dir is not None:
            found.append(WorkflowSource("bundled", self.bundled_dir))
        return found


def discover(config: DiscoveryConfig) -> Catalog:
    """Scan all enabled sources and build the catalog."""
    from workrail.workflow.catalog import build_catalog

    files: list[FoundFile] = []
    warnings: list[str] = []
    for source in config.sources():
        files.extend(_scan(source, warnings))
    return build_catalog(files, warnings)


def read_workflow_file(path: Path, origin: SourceOrigin = "custom") -> FoundFile:
    """Read one file for `workrail validate`."""
    return _read(WorkflowSource(origin, path.parent), path)


def _scan(source: WorkflowSource, warnings: list[str]) -> list[FoundFile]:
    directory = source.directory
    if not directory.exists():
        if source.origin in ("custom", "bundled"):
            warnings.append(f"{source.origin} workflow directory does not exist: {directory}")
        return []
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix == ".json" and p.is_file())
    except OSError as exc:
        warnings.append(f"cannot read {source.origin} workflow directory {directory}: {exc}")
        return []
    return [_read(source, p) for p in paths]


def _read(source: WorkflowSource, path: Path) -> FoundFile:
    from workrail.workflow.catalog import FoundFile

    try:
        size = path.stat().st_size
        if size > MAX_WORKFLOW_FILE_BYTES:
            return FoundFile(
                source,
                path,
                None,
                Problem(
                    "UNREADABLE_FILE",
                    "$",
                    f"file is {size} bytes; the limit is {MAX_WORKFLOW_FILE_BYTES}",
                    "split the workflow or remove embedded data",
                ),
            )
        return FoundFile(source, path, path.read_bytes())
    except OSError as exc:
        return FoundFile(
            source,
            path,
            None,
            Problem(
                "UNREADABLE_FILE",
                "$",
                f"cannot read file: {exc.strerror or exc}",
                "check the file exists and is readable",
            ),
        )
