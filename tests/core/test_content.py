"""Content-addressed bytes checked against their ref, as every backend reads them."""

from __future__ import annotations

from returns.result import Failure, Success

from workrail.core.canonical import canonical_bytes, sha256_digest
from workrail.core.content import decode_content


def test_bytes_that_hash_to_their_ref_decode_to_the_object() -> None:
    data = canonical_bytes({"a": [1, "é"]})
    assert decode_content(sha256_digest(data), data) == Success({"a": [1, "é"]})


def test_damaged_or_foreign_bytes_say_why() -> None:
    data = canonical_bytes({"a": 1})
    other = canonical_bytes({"a": 2})
    assert decode_content(sha256_digest(data), other) == Failure("content does not match")
    for raw, why in ((b"{not json", "invalid JSON"), (b"[1,2]", "not a JSON object")):
        result = decode_content(sha256_digest(raw), raw)
        assert isinstance(result, Failure)
        assert result.failure().startswith(why)
