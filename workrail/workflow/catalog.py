"""The workflow catalog: which definition answers to which id, given everything found.

Pure: the shell (`sources.py`) reads the files and hands over what it found; this module
decides validity, precedence and shadowing, so those rules are testable without disks.

Precedence (highest first): `WORKFLOW_STORAGE_PATH` directories in the order listed, the
project directory, the user directory, library directories (`WORKFLOW_LIBRARY_PATH`,
`--library`; they have the bundled workflows' rights), bundled workflows. Within one directory files are
taken in name order. Only valid definitions compete for an id: an invalid file is listed
with its problems and never hides a valid one; a valid definition that loses is listed as
shadowed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from returns.result import Failure, Result, Success

from workrail.workflow.compiler import CompiledWorkflow, compile_pinned
from workrail.workflow.envelopes import (
    PinnedWorkflow,
    PreviewWorkflow,
    pin_workflow,
    preview_workflow,
)
from workrail.workflow.errors import Problem, WorkflowError
from workrail.workflow.language import Construct, constructs_used
from workrail.workflow.passes.templates import RoutineLibrary, routine_template_id
from workrail.workflow.pipeline import NO_ROUTINES, run_passes
from workrail.workflow.source import BUNDLED_REF as BUNDLED_REF
from workrail.workflow.source import ROUTINES_SUBDIR as ROUTINES_SUBDIR
from workrail.workflow.source import FileRole as FileRole
from workrail.workflow.source import SourceKind as SourceKind
from workrail.workflow.source import SourceOrigin as SourceOrigin
from workrail.workflow.source import WorkflowSource as WorkflowSource
from workrail.workflow.validate import all_problems, parse_workflow_json


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A file the shell read (or failed to read: `content` is None and `problem` says why)."""

    source: WorkflowSource
    path: Path
    content: bytes | None
    problem: Problem | None = None
    role: FileRole = "workflow"
    """`routine`: found in a `routines/` folder; included by templateCall, never listed."""


@dataclass(frozen=True, slots=True)
class LoadedWorkflow:
    """A valid workflow, compiled, and where it came from.

    `definition` is the compiled form (what is pinned and hashed); `source_definition` the
    file as written, and the very same object when the file uses no construct that
    compiles (a v1.4-era file)."""

    source: WorkflowSource
    path: Path
    definition: dict[str, Any]
    source_definition: dict[str, Any] | None = None
    warnings: tuple[Problem, ...] = ()

    @property
    def workflow_id(self) -> str:
        return str(self.definition["id"])

    @property
    def source_json(self) -> dict[str, Any]:
        return self.definition if self.source_definition is None else self.source_definition

    def constructs(self) -> list[Construct]:
        """The language constructs the file uses (with the WorkRail release of each)."""
        return constructs_used(self.source_json)

    def pinned(self) -> PinnedWorkflow:
        return pin_workflow(self.definition)

    def preview(self) -> PreviewWorkflow:
        return preview_workflow(self.definition)

    def compile(self) -> Result[CompiledWorkflow, WorkflowError]:
        return compile_pinned(self.pinned())


@dataclass(frozen=True, slots=True)
class InvalidWorkflow:
    source: WorkflowSource
    path: Path
    problems: tuple[Problem, ...]
    raw: Any = None

    def _field(self, name: str) -> str | None:
        value = self.raw.get(name) if isinstance(self.raw, dict) else None
        return value if isinstance(value, str) else None

    @property
    def workflow_id(self) -> str | None:
        return self._field("id")

    @property
    def name(self) -> str | None:
        return self._field("name")

    @property
    def description(self) -> str | None:
        return self._field("description")

    @property
    def version(self) -> str | None:
        return self._field("version")


@dataclass(frozen=True, slots=True)
class Shadowed:
    workflow: LoadedWorkflow
    winner: LoadedWorkflow


@dataclass(frozen=True, slots=True)
class WorkflowNotFound:
    workflow_id: str

    @property
    def message(self) -> str:
        return f"Workflow not found: {self.workflow_id}"


@dataclass(frozen=True, slots=True)
class Catalog:
    workflows: Mapping[str, LoadedWorkflow]
    invalid: tuple[InvalidWorkflow, ...] = ()
    shadowed: tuple[Shadowed, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    routines: RoutineLibrary = field(default_factory=dict)
    """Template id → routine definition, for templateCall (not startable workflows)."""
    invalid_routines: tuple[InvalidWorkflow, ...] = ()

    def resolve(self, workflow_id: str) -> Result[LoadedWorkflow, WorkflowNotFound]:
        """The winning valid definition; invalid or unknown ids are not found."""
        found = self.workflows.get(workflow_id)
        return Success(found) if found is not None else Failure(WorkflowNotFound(workflow_id))

    def summaries(self) -> list[dict[str, Any]]:
        """`list_workflows` rows sorted by id: valid ones with their preview hash, invalid
        ones (when their id is readable and not served by a valid file) with `null`."""
        rows: dict[str, dict[str, Any]] = {}
        for wf in self.workflows.values():
            d = wf.definition
            rows[wf.workflow_id] = {
                "workflowId": wf.workflow_id,
                "name": d["name"],
                "description": d["description"],
                "version": d["version"],
                "kind": "workflow",
                "workflowHash": wf.preview().workflow_hash(),
            }
        for bad in self.invalid:
            wid = bad.workflow_id
            if wid is not None and wid not in rows:
                rows[wid] = {
                    "workflowId": wid,
                    "name": bad.name or wid,
                    "description": bad.description or "",
                    "version": bad.version or "",
                    "kind": "workflow",
                    "workflowHash": None,
                }
        return [rows[k] for k in sorted(rows)]


class CompileCache:
    """Load outcomes of file contents already seen, keyed by the content's sha256, the
    rights of its directory and the routines it could include: a catalogue rebuilt after
    one file changed compiles only that file. Bounded; the oldest half goes when full."""

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._items: dict[tuple[str, bool, bool, str], _Outcome] = {}
        self.hits = 0

    def get(self, key: tuple[str, bool, bool, str]) -> _Outcome | None:
        found = self._items.get(key)
        if found is not None:
            self.hits += 1
        return found

    def put(self, key: tuple[str, bool, bool, str], outcome: _Outcome) -> None:
        if len(self._items) >= self._limit:
            for old in list(self._items)[: self._limit // 2]:
                del self._items[old]
        self._items[key] = outcome


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What loading some content gives, whatever file it was read from."""

    raw: Any
    problems: tuple[Problem, ...]
    compiled: dict[str, Any] | None
    warnings: tuple[Problem, ...] = ()


def build_catalog(
    found: Iterable[FoundFile], warnings: Iterable[str] = (), cache: CompileCache | None = None
) -> Catalog:
    """Validate every found file and resolve ids by source precedence; routines first, so
    workflows can include them."""
    ordered = sorted(found, key=lambda f: (f.source.rank, f.path.name))
    routines, bad_routines, routine_digest = load_routines(
        [f for f in ordered if f.role == "routine"], cache
    )
    valid: list[LoadedWorkflow] = []
    invalid: list[InvalidWorkflow] = []
    for item in ordered:
        if item.role != "workflow":
            continue
        outcome = load_file(item, routines, cache=cache, routines_digest=routine_digest)
        if isinstance(outcome, LoadedWorkflow):
            valid.append(outcome)
        else:
            invalid.append(outcome)
    winners: dict[str, LoadedWorkflow] = {}
    shadowed: list[Shadowed] = []
    for wf in valid:
        current = winners.get(wf.workflow_id)
        if current is None:
            winners[wf.workflow_id] = wf
        else:
            shadowed.append(Shadowed(wf, current))
    by_id = {k: winners[k] for k in sorted(winners)}
    return Catalog(
        MappingProxyType(by_id),
        tuple(invalid),
        tuple(shadowed),
        tuple(warnings),
        routines,
        tuple(bad_routines),
    )


def load_routines(
    files: list[FoundFile], cache: CompileCache | None = None
) -> tuple[RoutineLibrary, list[InvalidWorkflow], str]:
    """Valid routines by template id (the first by precedence wins), the invalid ones, and
    a digest of what was found (part of every workflow's cache key)."""
    library: dict[str, dict[str, Any]] = {}
    bad: list[InvalidWorkflow] = []
    digest = hashlib.sha256()
    for item in files:
        outcome = _outcome(item, NO_ROUTINES, cache, "", routine=True)
        if outcome.problems:
            bad.append(InvalidWorkflow(item.source, item.path, outcome.problems, outcome.raw))
            continue
        template_id = routine_template_id(str(outcome.raw["id"]))
        if template_id not in library:
            library[template_id] = outcome.raw
            digest.update(template_id.encode() + b"\0" + _sha(item.content or b"").encode())
    return MappingProxyType(library), bad, digest.hexdigest() if library else ""


def load_file(
    item: FoundFile,
    routines: RoutineLibrary = NO_ROUTINES,
    *,
    cache: CompileCache | None = None,
    routines_digest: str = "",
) -> LoadedWorkflow | InvalidWorkflow:
    """Parse, validate and compile one file's content."""
    outcome = _outcome(item, routines, cache, routines_digest, routine=item.role == "routine")
    if outcome.problems or outcome.compiled is None:
        return InvalidWorkflow(item.source, item.path, outcome.problems, outcome.raw)
    source = None if outcome.compiled is outcome.raw else outcome.raw
    return LoadedWorkflow(item.source, item.path, outcome.compiled, source, outcome.warnings)


def _outcome(
    item: FoundFile,
    routines: RoutineLibrary,
    cache: CompileCache | None,
    routines_digest: str,
    *,
    routine: bool,
) -> _Outcome:
    if item.content is None:
        problem = item.problem or Problem("UNREADABLE_FILE", "$", "file unreadable", "check it")
        return _Outcome(None, (problem,), None)
    key = (_sha(item.content), item.source.privileged, routine, routines_digest)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    outcome = _load_content(item.content, item.source.privileged, routines, routine=routine)
    if cache is not None:
        cache.put(key, outcome)
    return outcome


def _load_content(
    content: bytes, privileged: bool, routines: RoutineLibrary, *, routine: bool
) -> _Outcome:
    parsed = parse_workflow_json(content)
    if isinstance(parsed, Failure):
        return _Outcome(None, (parsed.failure(),), None)
    raw = parsed.unwrap()
    found = all_problems(raw, bundled=privileged, routines=routines, routine=routine)
    errors = tuple(p for p in found if p.severity == "error")
    warnings = tuple(p for p in found if p.severity == "warning")
    if errors:
        return _Outcome(raw, errors, None, warnings)
    compiled = raw if routine else run_passes(raw, routines)
    return _Outcome(raw, (), compiled, warnings)


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()
