"""The workflow catalog: which definition answers to which id, given everything found.

Pure: the shell (`sources.py`) reads the files and hands over what it found; this module
decides validity, precedence and shadowing, so those rules are testable without disks.

Precedence (highest first): `WORKFLOW_STORAGE_PATH` directories in the order listed, the
project directory, the user directory, bundled workflows. Within one directory files are
taken in name order. Only valid definitions compete for an id: an invalid file is listed
with its problems and never hides a valid one; a valid definition that loses is listed as
shadowed.
"""

from __future__ import annotations

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
from workrail.workflow.source import BUNDLED_REF as BUNDLED_REF
from workrail.workflow.source import SourceKind as SourceKind
from workrail.workflow.source import SourceOrigin as SourceOrigin
from workrail.workflow.source import WorkflowSource as WorkflowSource
from workrail.workflow.validate import parse_workflow_json, validate_workflow


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A file the shell read (or failed to read: `content` is None and `problem` says why)."""

    source: WorkflowSource
    path: Path
    content: bytes | None
    problem: Problem | None = None


@dataclass(frozen=True, slots=True)
class LoadedWorkflow:
    """A valid workflow definition and where it came from."""

    source: WorkflowSource
    path: Path
    definition: dict[str, Any]

    @property
    def workflow_id(self) -> str:
        return str(self.definition["id"])

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


def build_catalog(found: Iterable[FoundFile], warnings: Iterable[str] = ()) -> Catalog:
    """Validate every found file and resolve ids by source precedence."""
    valid: list[LoadedWorkflow] = []
    invalid: list[InvalidWorkflow] = []
    ordered = sorted(found, key=lambda f: (f.source.rank, f.path.name))
    for item in ordered:
        outcome = load_file(item)
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
    return Catalog(MappingProxyType(by_id), tuple(invalid), tuple(shadowed), tuple(warnings))


def load_file(item: FoundFile) -> LoadedWorkflow | InvalidWorkflow:
    """Parse and validate one file's content."""
    if item.content is None:
        problem = item.problem or Problem("UNREADABLE_FILE", "$", "file unreadable", "check it")
        return InvalidWorkflow(item.source, item.path, (problem,))
    parsed = parse_workflow_json(item.content)
    if isinstance(parsed, Failure):
        return InvalidWorkflow(item.source, item.path, (parsed.failure(),))
    raw = parsed.unwrap()
    problems = validate_workflow(raw, bundled=item.source.origin == "bundled")
    if problems:
        return InvalidWorkflow(item.source, item.path, tuple(problems), raw)
    return LoadedWorkflow(item.source, item.path, raw)
