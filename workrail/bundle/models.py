"""The bundle envelope, bundleSchemaVersion 1 (spec 60-bundles §1).

Envelope objects ignore unknown keys, as the reference's reader does, because nothing in
them is durable truth. Events and manifest records use the store's own models, so a
bundle carries exactly what a session log holds. Snapshot and pinned-workflow values stay
plain JSON objects: they are stored byte-for-byte by content hash, and `validate` checks
them separately.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workrail.core.events import DomainEvent
from workrail.core.manifest import ManifestRecord
from workrail.core.wire import Digest, NonEmptyStr, Omittable

BUNDLE_SCHEMA_VERSION: Final = 1
INTEGRITY_KIND: Final = "sha256_manifest_v1"

# zod's `datetime()`: UTC with a literal Z, optional fraction, no offset.
_EXPORTED_AT_RE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


class _Envelope(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON object as it is written into the bundle."""
        return self.model_dump(mode="json", by_alias=True)


class IntegrityEntry(_Envelope):
    path: NonEmptyStr
    sha256: Digest
    bytes: Annotated[int, Field(ge=0)]


class Integrity(_Envelope):
    kind: Literal["sha256_manifest_v1"]
    entries: Annotated[list[IntegrityEntry], Field(min_length=1)]


class SalvageReason(_Envelope):
    code: NonEmptyStr
    message: str


class Salvage(_Envelope):
    """Marks an export of a corrupt_tail session: only its validated prefix is inside.

    Informational, like `producer`; a top-level key because the reference's reader strips
    unknown top-level keys rather than rejecting them.
    """

    complete: Literal[False] = False
    reason: SalvageReason


class Producer(_Envelope):
    appVersion: NonEmptyStr
    appliedConfigHash: Omittable[Digest]


class SessionContents(_Envelope):
    sessionId: NonEmptyStr
    events: list[DomainEvent]
    manifest: list[ManifestRecord]
    snapshots: dict[str, dict[str, Any]]
    pinnedWorkflows: dict[str, dict[str, Any]]


class Bundle(_Envelope):
    bundleSchemaVersion: Literal[1]
    bundleId: NonEmptyStr
    exportedAt: str
    producer: Producer
    integrity: Integrity
    session: SessionContents
    salvage: Omittable[Salvage]

    @field_validator("exportedAt")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        if _EXPORTED_AT_RE.fullmatch(value) is None:
            raise ValueError("exportedAt must be an ISO-8601 UTC timestamp ending in Z")
        try:
            datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")
        except ValueError as exc:
            raise ValueError(f"exportedAt is not a real date and time: {exc}") from exc
        return value

    def session_json(self) -> dict[str, Any]:
        """The `session` section as JSON (what integrity paths resolve against)."""
        return self.session.to_json()
