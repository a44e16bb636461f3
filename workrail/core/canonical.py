"""RFC 8785 (JCS) canonical JSON and `sha256:<hex>` digests.

Every hash and every durable JSON file goes through here, so the bytes match the reference
implementation exactly. Values JCS cannot represent (NaN, integers beyond 2^53, non-JSON
types, lone surrogates) are rejected with `CanonicalJsonError`, never silently changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final

import orjson
import rfc8785

JsonValue = Any  # a JSON value: None, bool, int, float, str, list, dict[str, ...]

DIGEST_RE: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_FILE_SAFE_RE: Final = re.compile(r"[^a-zA-Z0-9._-]")


class CanonicalJsonError(ValueError):
    """A value cannot be written as canonical JSON (RFC 8785)."""


def canonical_bytes(value: JsonValue) -> bytes:
    """The RFC 8785 bytes of a JSON value.

    Integers outside ±(2^53 − 1), NaN/Infinity, lone surrogates, non-string keys and
    non-JSON types raise `CanonicalJsonError` with a message naming the problem.

    Values built only of exact dict/list/str/int/bool/None, without floats and without
    keys beyond the BMP (nearly all durable records) are written by `orjson`, whose output
    is byte-identical to JCS for them (same escapes; its key order, by code point, equals
    UTF-16 order in the BMP). Everything else — and anything orjson refuses — takes the
    checked path (the `json` module, or `rfc8785` for floats and astral keys), which also
    names what is wrong. Property tests pin both paths to `rfc8785`.
    """
    if _orjson_exact(value):
        try:
            return orjson.dumps(value, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, an integer beyond ±(2^53 − 1), deep nesting
    return _checked_bytes(value)


_ORJSON_OPTIONS: Final = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
_LEAF_TYPES: Final = frozenset({str, int, bool, type(None)})


def _orjson_exact(value: JsonValue) -> bool:
    """True when `value` holds only the exact types whose orjson bytes are JCS bytes.

    A type check only, at C speed where it can be (a list of strings is one `join`):
    integer range and string validity are left to orjson, which refuses what JCS refuses.
    """
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            try:
                keys = "".join(item)
            except TypeError:
                return False  # a key that is not a string
            if not keys.isascii() and max(keys) > "\uffff":
                return False  # UTF-16 order differs from code-point order beyond the BMP
            children: Any = item.values()
        elif kind is list:
            if item and type(item[0]) is str:
                try:
                    "".join(item)
                    continue
                except TypeError:
                    pass
            children = item
        elif kind in _LEAF_TYPES:
            continue
        else:
            return False
        for child in children:
            child_kind = type(child)
            if child_kind is dict or child_kind is list:
                push(child)
            elif child_kind not in _LEAF_TYPES:
                return False
    return True


def _checked_bytes(value: JsonValue) -> bytes:
    """The general path: reject non-JSON with a reason, then `json` or `rfc8785`."""
    if _is_plain(value):
        try:
            return json.dumps(
                value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CanonicalJsonError(f"lone surrogate in a string: {exc}") from exc
        except RecursionError as exc:
            raise CanonicalJsonError("value is nested too deeply") from exc
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as exc:
        raise CanonicalJsonError(f"integer out of the JSON-safe range ±(2^53-1): {exc}") from exc
    except rfc8785.FloatDomainError as exc:
        raise CanonicalJsonError(f"NaN and Infinity are not JSON numbers: {exc}") from exc
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalJsonError(f"value is not canonical-JSON encodable: {exc}") from exc
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise CanonicalJsonError(f"value is not canonical-JSON encodable: {exc}") from exc


_MAX_SAFE_INT: Final = 2**53 - 1


def _is_plain(value: JsonValue) -> bool:
    """Check the value is JSON (raising `CanonicalJsonError` if not) and report whether
    the fast path applies: no floats, no out-of-range ints, no astral-plane keys.

    Tuples and other containers are rejected rather than silently written as arrays: a
    durable model that hands one over is a bug, and it would not round-trip as itself.
    """
    plain = True
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) or item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                plain = False  # rfc8785 rejects it with IntegerDomainError
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise CanonicalJsonError(f"object keys must be strings, got {key!r}")
                if plain and not key.isascii() and max(key) > "\uffff":
                    plain = False
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float):
            plain = False
        else:
            raise CanonicalJsonError(f"not a JSON value: {type(item).__name__}")
    return plain


def sha256_digest(data: bytes) -> str:
    """`sha256:<64 lowercase hex>` of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_digest(value: JsonValue) -> str:
    """`sha256:<hex>` of the canonical bytes of a JSON value."""
    return sha256_digest(canonical_bytes(value))


def is_digest(text: str) -> bool:
    """True when `text` is exactly `sha256:` followed by 64 lowercase hex characters."""
    return DIGEST_RE.fullmatch(text) is not None


def digest_file_name(digest: str) -> str:
    """The file name the reference derives from a digest: `sha256_<hex>.json`.

    Only valid digests are accepted, so the result can never escape its directory.
    """
    if not is_digest(digest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return _FILE_SAFE_RE.sub("_", digest) + ".json"


def jsonl_line(value: JsonValue) -> bytes:
    """One JSONL line: canonical bytes plus a single `\\n`."""
    return canonical_bytes(value) + b"\n"
