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
from workrail.workflow.source import ROUTINES_SUBDIR, FileRole, SourceOrigin, WorkflowSource

if TYPE_CHECKING:
    from workrail.workflow.catalog import Catalog, CompileCache, FoundFile

# The catalog (JSON Schema, pydantic) is imported where files are read, not here: the
# configuration holds a DiscoveryConfig, and a server answers its first requests before
# it reads any workflow.

MAX_WORKFLOW_FILE_BYTES: Final = 2 * 1024 * 1024
_FALSE_WORDS: Final = frozenset({"0", "false", "no", "off"})
USER_SUBDIR: Final = Path(".workrail") / "workflows"
PROJECT_SUBDIR: Final = Path(".workrail") / "workflows"
LIBRARY_PATH_ENV: Final = "WORKFLOW_LIBRARY_PATH"


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
    library_dirs: tuple[Path, ...] = ()
    """`--library` directories; searched after WORKFLOW_LIBRARY_PATH's."""

    def _enabled(self, name: str) -> bool:
        return self.env.get(name, "true").strip().lower() not in _FALSE_WORDS

    def _paths(self, name: str) -> list[Path]:
        """A path-list variable's directories (relative ones against the cwd)."""
        paths: list[Path] = []
        for part in (p for p in self.env.get(name, "").split(os.pathsep) if p.strip()):
            directory = Path(part.strip()).expanduser()
            paths.append(directory if directory.is_absolute() else self.cwd / directory)
        return paths

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
        libraries = self._paths(LIBRARY_PATH_ENV)
        for directory in self.library_dirs:
            if directory not in libraries:
                libraries.append(directory)
        found.extend(WorkflowSource("library", d, i) for i, d in enumerate(libraries))
        if self._enabled("WORKFLOW_INCLUDE_BUNDLED") and self.bundled_dir is not None:
            found.append(WorkflowSource("bundled", self.bundled_dir))
        return found


def discover(config: DiscoveryConfig, cache: CompileCache | None = None) -> Catalog:
    """Scan all enabled sources (and their `routines/` folders) and build the catalog;
    `cache` keeps compiled outcomes of contents already seen."""
    from workrail.workflow.catalog import build_catalog

    files: list[FoundFile] = []
    warnings: list[str] = []
    for source in config.sources():
        files.extend(_scan(source, warnings))
        files.extend(_scan(source, [], ROUTINES_SUBDIR))
    return build_catalog(files, warnings, cache)


def read_workflow_file(path: Path, origin: SourceOrigin = "custom") -> FoundFile:
    """Read one file for `workrail validate` (a file in a `routines/` folder is a routine)."""
    role: FileRole = "routine" if path.parent.name == ROUTINES_SUBDIR else "workflow"
    return _read(WorkflowSource(origin, path.parent), path, role)


def routines_near(path: Path, origin: SourceOrigin = "custom") -> list[FoundFile]:
    """The routines a file at `path` may include: those of the `routines/` folder beside it
    (for a routine: its own folder)."""
    directory = path.parent.parent if path.parent.name == ROUTINES_SUBDIR else path.parent
    return _scan(WorkflowSource(origin, directory), [], ROUTINES_SUBDIR)


def _scan(source: WorkflowSource, warnings: list[str], subdir: str = "") -> list[FoundFile]:
    directory = source.directory / subdir if subdir else source.directory
    role: FileRole = "routine" if subdir else "workflow"
    if not directory.exists():
        if source.origin in ("custom", "bundled", "library") and not subdir:
            warnings.append(f"{source.origin} workflow directory does not exist: {directory}")
        return []
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix == ".json" and p.is_file())
    except OSError as exc:
        warnings.append(f"cannot read {source.origin} workflow directory {directory}: {exc}")
        return []
    return [_read(source, p, role) for p in paths]


def _read(source: WorkflowSource, path: Path, role: FileRole = "workflow") -> FoundFile:
    from workrail.workflow.catalog import FoundFile

    def unreadable(message: str, fix: str) -> FoundFile:
        return FoundFile(source, path, None, Problem("UNREADABLE_FILE", "$", message, fix), role)

    try:
        size = path.stat().st_size
        if size > MAX_WORKFLOW_FILE_BYTES:
            return unreadable(
                f"file is {size} bytes; the limit is {MAX_WORKFLOW_FILE_BYTES}",
                "split the workflow or remove embedded data",
            )
        return FoundFile(source, path, path.read_bytes(), role=role)
    except OSError as exc:
        return unreadable(
            f"cannot read file: {exc.strerror or exc}", "check the file exists and is readable"
        )
