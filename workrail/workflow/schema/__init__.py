"""The workflow JSON Schema (draft-07, format v0.2.0) shipped as package data."""

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
