"""Durable models share pydantic's per-instance bookkeeping without changing behaviour."""

from __future__ import annotations

import importlib
import json
import pkgutil
import tracemalloc
from typing import Any

from pydantic import BaseModel

import workrail
from tests.core.test_events import raw_event
from workrail.core.canonical import jsonl_line
from workrail.core.events import parse_event


def _artifact(content: Any = None, *, present: bool) -> dict[str, Any]:
    raw = raw_event("node_output_appended")
    raw["data"]["outputChannel"] = "artifact"
    raw["data"]["payload"] = {
        "payloadKind": "artifact_ref",
        "sha256": "sha256:" + "ab" * 32,
        "contentType": "application/json",
        "byteLength": 4,
    }
    if present:
        raw["data"]["payload"]["content"] = content
    return raw


def test_equal_shapes_share_one_fields_set() -> None:
    first = parse_event(raw_event("node_created"))
    second = parse_event(raw_event("node_created", eventIndex=9))
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.data.__pydantic_extra__ is second.data.__pydantic_extra__


def test_which_fields_were_set_still_decides_what_is_written() -> None:
    """`content: null` and no `content` differ only by the fields set: both survive."""
    absent = parse_event(_artifact(present=False))
    null = parse_event(_artifact(None, present=True))
    again = parse_event(_artifact(present=False))
    for event, raw in ((absent, _artifact(present=False)), (null, _artifact(None, present=True))):
        assert json.loads(jsonl_line(event.to_json())) == raw
    assert json.loads(jsonl_line(again.to_json())) == _artifact(present=False)


def test_unknown_keys_stay_per_event() -> None:
    plain = parse_event(raw_event("node_created"))
    extra = raw_event("node_created")
    extra["data"]["futureField"] = 1
    with_extra = parse_event(extra)
    assert with_extra.data.__pydantic_extra__ == {"futureField": 1}
    assert plain.data.__pydantic_extra__ == {}
    assert json.loads(jsonl_line(with_extra.to_json()))["data"]["futureField"] == 1


def test_copies_with_updates_do_not_touch_the_shared_sets() -> None:
    event = parse_event(raw_event("node_created"))
    other = parse_event(raw_event("node_created"))
    before = set(other.__pydantic_fields_set__)
    copied = event.model_copy(update={"eventIndex": 7})
    assert copied.eventIndex == 7
    assert event.eventIndex == 3
    assert other.__pydantic_fields_set__ == before


def test_a_cached_event_costs_under_a_kilobyte_and_a_half() -> None:
    raws = [raw_event("node_created", eventIndex=i, eventId=f"evt_{i:026d}") for i in range(500)]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        events = [parse_event(raw) for raw in raws]
        used = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(events) == 500
    assert used / 500 < 1536, f"{used / 500:.0f} bytes per event"


def test_hostile_unknown_keys_cannot_grow_the_shared_field_sets() -> None:
    """Unknown keys are part of a record's field set and any client can vary them: such
    sets are never interned, and the records keep their keys all the same."""
    from workrail.core import wire

    class Open(wire.Lenient):
        known: int = 0

    interned = len(wire._FIELD_SETS)
    made = [
        Open.model_validate({"known": 1, f"x{n}": n}) for n in range(wire.FIELD_SETS_KEPT + 500)
    ]
    assert len(wire._FIELD_SETS) == interned  # not one set more
    last = made[-1]
    assert last.to_json() == {
        "known": 1,
        f"x{wire.FIELD_SETS_KEPT + 499}": wire.FIELD_SETS_KEPT + 499,
    }
    assert last.model_fields_set == {"known", f"x{wire.FIELD_SETS_KEPT + 499}"}
    # the shapes of ordinary records are still shared
    first = parse_event(raw_event("node_created"))
    second = parse_event(raw_event("node_created", eventIndex=9))
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__


def _ours(model: type[BaseModel]) -> bool:
    """A model of this package whose configuration is its own (not an SDK model's)."""
    bases = [b for b in model.__mro__ if issubclass(b, BaseModel) and b is not BaseModel]
    return all(b.__module__.startswith("workrail.") for b in bases)


def _workrail_models() -> list[type[BaseModel]]:
    for module in pkgutil.walk_packages(workrail.__path__, "workrail."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if _ours(sub):
                found.append(sub)
    return found


def test_every_model_builds_its_validator_on_first_use_not_at_import() -> None:
    """A server's first answers need few models; building all at import cost it 100 ms."""
    models = _workrail_models()
    assert len(models) > 50
    eager = [
        f"{m.__module__}.{m.__qualname__}" for m in models if not m.model_config.get("defer_build")
    ]
    assert eager == []
