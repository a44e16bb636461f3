"""Checking content-addressed bytes against their name: what every backend's snapshot and
pinned-workflow store does on a first read, written once so the backends agree on what
counts as damaged."""

from __future__ import annotations

import json
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.canonical import sha256_digest


def decode_content(ref: str, data: bytes) -> Result[dict[str, Any], str]:
    """The JSON object `data` holds, if its sha256 is `ref`; else why not (the bytes hash
    to another ref, are not JSON, or hold something other than an object)."""
    if sha256_digest(data) != ref:
        return Failure("content does not match")
    try:
        value = json.loads(data)
    except ValueError as exc:
        return Failure(f"invalid JSON: {exc}")
    if not isinstance(value, dict):
        return Failure("not a JSON object")
    return Success(value)
