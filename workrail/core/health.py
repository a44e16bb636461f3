"""Session health (spec 10-storage §6): a closed set, each non-healthy value with a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

HealthKind = Literal["healthy", "corrupt_tail", "corrupt_head", "unknown_version"]
CorruptionCode = Literal[
    "digest_mismatch",
    "non_contiguous_indices",
    "missing_attested_segment",
    "unknown_schema_version",
    "schema_validation_failed",
]
Location = Literal["head", "tail"]


@dataclass(frozen=True)
class Corruption:
    """Why a strict load failed, and where (head = first line of the file being parsed)."""

    code: CorruptionCode
    message: str
    location: Location


@dataclass(frozen=True)
class SessionHealth:
    kind: HealthKind
    reason: Corruption | None = None

    @staticmethod
    def of(corruption: Corruption | None) -> SessionHealth:
        if corruption is None:
            return HEALTHY
        kind: HealthKind
        if corruption.code == "unknown_schema_version":
            # Written by a newer (or foreign) version: not damage, but not ours to extend.
            kind = "unknown_version"
        else:
            kind = "corrupt_head" if corruption.location == "head" else "corrupt_tail"
        return SessionHealth(kind, corruption)

    @property
    def is_healthy(self) -> bool:
        return self.kind == "healthy"

    def to_json(self) -> dict[str, Any]:
        """Wire form used inside error details: `{kind, reason: {code, message}}`."""
        if self.reason is None:
            return {"kind": self.kind}
        return {
            "kind": self.kind,
            "reason": {"code": self.reason.code, "message": self.reason.message},
        }


HEALTHY = SessionHealth("healthy")
