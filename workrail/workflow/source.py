"""Where workflows come from: a source directory and how runs started from it are recorded.

Apart from the catalog (which loads the JSON Schema validator and the pydantic models) so
that the configuration, which names the sources, loads without either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

SourceKind = Literal["bundled", "user", "project"]
SourceOrigin = Literal["bundled", "user", "project", "custom", "library"]
FileRole = Literal["workflow", "routine"]
BUNDLED_REF: Final = "(bundled)"
ROUTINES_SUBDIR: Final = "routines"
# Lower rank wins when two valid definitions share an id.
_ORIGIN_RANK: Final[dict[SourceOrigin, int]] = {
    "custom": 0,
    "project": 1,
    "user": 2,
    "library": 3,
    "bundled": 4,
}
_PRIVILEGED: Final = frozenset({"bundled", "library"})


@dataclass(frozen=True, slots=True)
class WorkflowSource:
    """One directory of workflows and how runs started from it are recorded."""

    origin: SourceOrigin
    directory: Path
    order: int = 0  # position among custom directories

    @property
    def kind(self) -> SourceKind:
        """`workflowSourceKind` of run_started (custom and library directories count as
        project)."""
        if self.origin == "bundled" or self.origin == "user":
            return self.origin
        return "project"

    @property
    def privileged(self) -> bool:
        """Bundled and library workflows may use the reserved `wr.` namespace."""
        return self.origin in _PRIVILEGED

    @property
    def ref(self) -> str:
        """`workflowSourceRef` of run_started: `(bundled)` or the directory path."""
        return BUNDLED_REF if self.origin == "bundled" else str(self.directory)

    @property
    def rank(self) -> tuple[int, int]:
        return (_ORIGIN_RANK[self.origin], self.order)
