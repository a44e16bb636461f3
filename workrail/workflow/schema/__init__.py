"""The workflow JSON Schema (draft-07; the v1.4 format and the current language) shipped
as package data, with two validators: jsonschema, which words every problem, and the much
faster jsonschema-rs, which only says whether there is one, so a catalogue of valid files
loads without paying for the wording."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, cast

from jsonschema import Draft7Validator

SCHEMA_FILE = "workflow.schema.json"


@cache
def workflow_schema() -> dict[str, Any]:
    """The parsed schema; read once from the installed package."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return cast(dict[str, Any], json.loads(text))


@cache
def workflow_validator() -> Draft7Validator:
    schema = workflow_schema()
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


@cache
def _fast_validator() -> Any:
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a dependency; the slow path still works
        return None
    return jsonschema_rs.Draft7Validator(workflow_schema())


def schema_accepts(instance: Any) -> bool | None:
    """True or False when the fast validator could decide; None when it cannot (then ask
    `workflow_validator()`, which is also the one to list the problems)."""
    fast = _fast_validator()
    if fast is None:
        return None
    try:
        return bool(fast.is_valid(instance))
    except (ValueError, TypeError, OverflowError):
        return None
