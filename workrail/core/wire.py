"""Shared pydantic building blocks for durable and wire models.

Durable JSON must omit absent optional fields (never `null`, spec 00 §5), keep unknown keys
of records written by other versions (so re-exported bytes stay identical), and use the
spec's camelCase names verbatim.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

T = TypeVar("T")

DEFERRED: Final = ConfigDict(defer_build=True)
"""Every model and adapter here builds its validator on first use, not at import: a
server's first answers need few of them (tests/core/test_wire.py holds every model to
it)."""


class CamelWire(BaseModel):
    """A frozen, strict record the engine itself writes (snapshots, blockers, traces,
    envelopes): camelCase names on the wire, unknown keys refused."""

    model_config = ConfigDict(
        defer_build=True,
        extra="forbid",
        frozen=True,
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


def _is_none(value: object) -> bool:
    return value is None


# An optional field that is omitted from dumps when absent (None).
Omittable = Annotated[T | None, Field(default=None, exclude_if=_is_none)]

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
SafeId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_-]+$")]
DedupeKey = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_:>-]+$", max_length=256)]


def _reject_bool(value: object) -> object:
    # Literal[1] alone accepts True (True == 1); durable formats say the number 1.
    if isinstance(value, bool):
        raise ValueError("expected the number 1, not a boolean")
    return value


SchemaV1 = Annotated[Literal[1], BeforeValidator(_reject_bool)]


FIELD_SETS_KEPT: Final = 4096
"""How many distinct field sets are interned, at most. A field set includes unknown keys,
which any client can vary at will, so one with unknown keys is never interned; the bound
is the backstop (beyond it new shapes are simply not shared)."""

_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_LAST_FIELD_SET: dict[type, set[str]] = {}
_NO_EXTRA: dict[str, Any] = {}


class Lenient(BaseModel):
    """A durable record: unknown keys are kept (and written back) but never produced by us."""

    model_config = ConfigDict(defer_build=True, extra="allow", frozen=True)

    def model_post_init(self, context: Any, /) -> None:
        """Share the bookkeeping pydantic keeps per instance (which fields were set; the
        empty dict of unknown keys) between equal instances: it was over half the memory
        of a cached session. Safe because these models are frozen: nothing changes either
        in place (copies copy them first)."""
        if self.__pydantic_extra__:
            return  # unknown keys are anyone's to vary: such a shape is never interned
        object.__setattr__(self, "__pydantic_extra__", _NO_EXTRA)
        fields = self.__pydantic_fields_set__
        shared = _LAST_FIELD_SET.get(type(self))
        if shared is None or shared != fields:
            key = frozenset(fields)
            found = _FIELD_SETS.get(key)
            if found is None:
                if len(_FIELD_SETS) >= FIELD_SETS_KEPT:
                    return  # a shape past the bound: kept as is, not shared
                found = _FIELD_SETS.setdefault(key, fields)
            shared = found
            _LAST_FIELD_SET[type(self)] = shared
        object.__setattr__(self, "__pydantic_fields_set__", shared)

    def to_json(self) -> dict[str, Any]:
        """The JSON object as it goes on disk or on the wire."""
        return self.model_dump(mode="json", by_alias=True)


class Strict(Lenient):
    """A record whose schema is closed: unknown keys are a schema failure."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)
