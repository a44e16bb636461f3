"""Manifest records (spec 10-storage §3): the control stream that attests segments and pins."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, TypeAdapter, field_validator

from workrail.core.wire import DEFERRED, Digest, Lenient, NonEmptyStr, SchemaV1


class ManifestBase(Lenient):
    v: SchemaV1
    manifestIndex: Annotated[int, Field(ge=0)]
    sessionId: NonEmptyStr


class SegmentClosed(ManifestBase):
    kind: Literal["segment_closed"]
    firstEventIndex: Annotated[int, Field(ge=0)]
    lastEventIndex: Annotated[int, Field(ge=0)]
    segmentRelPath: NonEmptyStr
    sha256: Digest
    bytes: Annotated[int, Field(ge=0)]

    @field_validator("segmentRelPath")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith(("/", "\\")) or "../" in value or "..\\" in value:
            raise ValueError("segmentRelPath must be relative and must not climb")
        return value


class SnapshotPinned(ManifestBase):
    kind: Literal["snapshot_pinned"]
    eventIndex: Annotated[int, Field(ge=0)]
    snapshotRef: Digest
    createdByEventId: NonEmptyStr


ManifestRecord = Annotated[SegmentClosed | SnapshotPinned, Field(discriminator="kind")]
MANIFEST_ADAPTER: Final[TypeAdapter[ManifestRecord]] = TypeAdapter(ManifestRecord, config=DEFERRED)


def segment_rel_path(first: int, last: int) -> str:
    """`events/<first>-<last>.jsonl`, each index zero-padded to at least 8 digits."""
    return f"events/{first:08d}-{last:08d}.jsonl"
