"""What the engine needs from workflow discovery: find a valid workflow by id, with the
source kind/ref that `run_started` records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class CatalogEntry:
    workflow_id: str
    source_kind: str  # bundled | user | project
    source_ref: str
    definition: dict[str, Any] | None  # None when the file is invalid
    name: str = ""
    description: str = ""
    version: str = ""
    source_definition: dict[str, Any] | None = None
    """The file as written, when compiling changed it (`definition` is what runs pin)."""
    source_path: str = ""  # the invalid file (set only when definition is None)
    problems: tuple[Mapping[str, str], ...] = ()  # why it is invalid: {code, path, message, fix}

    @property
    def valid(self) -> bool:
        return self.definition is not None


class WorkflowCatalog(Protocol):
    def entries(self) -> Sequence[CatalogEntry]: ...

    def get(self, workflow_id: str) -> CatalogEntry | None:
        """The valid definition of the id; else its invalid file's entry (definition None,
        with source_path and problems); None when no file defines it."""
        ...
