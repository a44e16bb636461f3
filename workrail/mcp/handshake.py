"""The `initialize` answer, byte for byte as the SDK's server writes it, without the SDK.

An MCP client spawns `workrail mcp` and waits for the answer to `initialize` before it
does anything else; importing the SDK's server costs most of that wait. So the stdio
start-up answers a plain, well-formed `initialize` from here without the SDK; once the
SDK's server is needed, the request is replayed into it (its own answer is dropped, being
the same bytes) and it answers everything after. tests/mcp/test_handshake.py checks that
this answer equals the SDK's for every protocol revision, with and without prompts and
resources, and that every request accepted here is one the SDK accepts. The requests that
follow it, `tools/list` and `prompts/list`, are answered from the SDK's own earlier
answers (workrail.mcp.catalog_cache), and `ping` with its constant, the same way: only
when plain.

The 2026-era revisions have no `initialize`: every request carries an envelope in its
`_meta` (the revision, the client's capabilities and identity), and the first request
decides the connection's era for the SDK (`opens_modern_era`). A plain request of that era
(`modern_listing`, `plain_tool_call(modern=True)`: a plain envelope of one of
MODERN_PROTOCOL_VERSIONS) is answered the same way, from the SDK's answers at that
revision.

Anything this module is not sure of — an unknown field, a `_meta` (but a tool call's
progress token), a float, a string id with characters that need escaping, a capability
that is not an object — is left to the SDK (None): the client then waits for the SDK, and
gets the SDK's answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping
from typing import Any, Final

from workrail import __version__
from workrail.mcp.instructions import INSTRUCTIONS

SERVER_NAME: Final = "workrail"

HANDSHAKE_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions the SDK negotiates through `initialize` (mcp_types.version's own list;
a test keeps the two equal). A client asking for another gets the newest of these."""
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
"""The revisions without `initialize`, whose every request carries its own envelope in
`_meta` (mcp_types.version's own list; a test keeps the two equal)."""
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
"""The result `_meta` key under which the SDK stamps the server's identity at those
revisions."""
_CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
_CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
_ENVELOPE_REQUIRED: Final = frozenset({PROTOCOL_VERSION_KEY, _CLIENT_CAPABILITIES_KEY})
_MODERN_META_KEYS: Final = _ENVELOPE_REQUIRED | {_CLIENT_INFO_KEY, "progressToken"}

_TOOLS: Final = {"tools": {"listChanged": False}}
_CATALOG: Final = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
}
_MAX_DEPTH: Final = 16
_MAX_INT: Final = 2**53 - 1
_PLAIN_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_CLIENT_INFO_KEYS: Final = frozenset({"name", "version", "title", "description", "websiteUrl"})
_CALL_PARAMS: Final = frozenset({"name", "arguments", "_meta"})
_LISTING_KEYS: Final = (
    frozenset({"jsonrpc", "id", "method"}),
    frozenset({"jsonrpc", "id", "method", "params"}),
)
CONSTANT_RESULTS: Final = {"ping": b"{}"}
"""The `result` JSON of requests the SDK's server answers with a constant whatever the
revision: `ping`'s empty result (tests/mcp/test_handshake.py compares)."""
RESOURCE_LISTINGS: Final = ("resources/list", "resources/templates/list")
"""The listings answered without the SDK by WorkRail's own listing, when resources are
offered (workrail.mcp.resource_listing: resources/list reads the store)."""


class _Unsure(Exception):
    """The frame is not one this module answers; the SDK will."""


def negotiate(requested: str) -> str:
    """The SDK's rule: the client's revision when it is one of ours, else our newest."""
    return (
        requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    )


def initialize_result(protocol_version: str, *, offers_content: bool) -> dict[str, Any]:
    """The `result` of the answer to `initialize`, keys in the SDK's order."""
    capabilities = {**_CATALOG, **_TOOLS} if offers_content else dict(_TOOLS)
    return {
        "capabilities": capabilities,
        "instructions": INSTRUCTIONS,
        "protocolVersion": negotiate(protocol_version),
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def answer_initialize(frame: bytes, *, offers_content: bool) -> tuple[int | str, bytes] | None:
    """(request id, the answer's line without its newline) when `frame` is an `initialize`
    request this module is sure the SDK accepts; None otherwise."""
    try:
        request = _plain_json(frame)
        request_id, protocol_version = _initialize_request(request)
    except _Unsure:
        return None
    answer = {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": initialize_result(protocol_version, offers_content=offers_content),
    }
    return request_id, json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()


def _plain_json(frame: bytes) -> Any:
    """JSON without anything two parsers might read differently: no duplicate keys, no
    floats or constants, no integers beyond ±(2^53-1), no surrogate escapes, no deep
    nesting."""
    if _SURROGATE_ESCAPE.search(frame):
        raise _Unsure
    try:
        text = frame.decode("utf-8")
        parsed = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_float=_refuse,
            parse_constant=_refuse,
            parse_int=_bounded_int,
        )
    except (ValueError, RecursionError, _Unsure):
        raise _Unsure from None
    _depth_within(parsed, _MAX_DEPTH)
    return parsed


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Unsure
    return result


def _refuse(text: str) -> Any:
    raise _Unsure


def _bounded_int(text: str) -> int:
    if len(text) > 17:
        raise _Unsure
    value = int(text)
    if abs(value) > _MAX_INT:
        raise _Unsure
    return value


def _depth_within(value: Any, depth: int) -> None:
    if depth < 0:
        raise _Unsure
    if isinstance(value, dict):
        for item in value.values():
            _depth_within(item, depth - 1)
    elif isinstance(value, list):
        for item in value:
            _depth_within(item, depth - 1)


def _initialize_request(request: Any) -> tuple[int | str, str]:
    if not isinstance(request, dict) or set(request) != {"jsonrpc", "id", "method", "params"}:
        raise _Unsure
    if request["jsonrpc"] != "2.0" or request["method"] != "initialize":
        raise _Unsure
    request_id = _plain_id(request["id"])
    params = request["params"]
    if not isinstance(params, dict) or set(params) != {
        "protocolVersion",
        "capabilities",
        "clientInfo",
    }:
        raise _Unsure
    protocol_version = params["protocolVersion"]
    if not isinstance(protocol_version, str):
        raise _Unsure
    _capabilities(params["capabilities"])
    _client_info(params["clientInfo"])
    return request_id, protocol_version


def _plain_id(request_id: Any) -> int | str:
    """An id the SDK reads and writes back as the same bytes json.dumps writes."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise _Unsure
    if isinstance(request_id, str) and not _PLAIN_ID.fullmatch(request_id):
        raise _Unsure
    return request_id


def answer_listing(frame: bytes, results: Mapping[str, bytes]) -> tuple[int | str, bytes] | None:
    """(request id, the answer's line) when `frame` is a plain request for one of the
    methods in `results` (method → the `result` JSON the SDK wrote for it), without
    parameters; None otherwise (the SDK answers)."""
    listing = plain_listing(frame, results)
    if listing is None:
        return None
    request_id, method = listing
    return request_id, _result_line(request_id, results[method])


def plain_listing(frame: bytes, methods: Container[str]) -> tuple[int | str, str] | None:
    """(request id, method) when `frame` is a plain request for one of `methods` without
    parameters (none, or an empty object); None otherwise."""
    try:
        request = _plain_json(frame)
        least, most = _LISTING_KEYS
        if not isinstance(request, dict) or not least <= set(request) <= most:
            raise _Unsure
        method = request["method"]
        if request["jsonrpc"] != "2.0" or not isinstance(method, str) or method not in methods:
            raise _Unsure
        params = request.get("params", {})
        if not isinstance(params, dict) or params:
            raise _Unsure
        return _plain_id(request["id"]), method
    except _Unsure:
        return None


def modern_listing(frame: bytes, methods: Container[str]) -> tuple[int | str, str, str] | None:
    """(request id, method, revision) when `frame` is a plain 2026-era request for one of
    `methods` whose only parameter is its envelope (see _plain_envelope); None otherwise."""
    request = _plain_request(frame, methods)
    if request is None:
        return None
    request_id, method, params = request
    if not isinstance(params, dict) or set(params) != {"_meta"}:
        return None
    if not _plain_envelope(params["_meta"]):
        return None
    return request_id, method, params["_meta"][PROTOCOL_VERSION_KEY]


def answer_modern_listing(
    frame: bytes, results: Mapping[str, Mapping[str, bytes]]
) -> tuple[int | str, bytes] | None:
    """(request id, the answer's line) when `frame` is a plain 2026-era request (see
    modern_listing) for a method `results` holds at the request's revision (revision →
    method → the `result` JSON the SDK wrote); None otherwise."""
    listing = modern_listing(frame, {m for by_method in results.values() for m in by_method})
    if listing is None or listing[1] not in results.get(listing[2], {}):
        return None
    request_id, method, revision = listing
    return request_id, _result_line(request_id, results[revision][method])


def answer_modern_cached_call(
    frame: bytes, calls: Mapping[str, Mapping[str, bytes]]
) -> tuple[int | str, bytes] | None:
    """As answer_cached_call, for a 2026-era call (`calls`: revision → tool → result)."""
    call = _plain_call(frame, modern=True)
    if call is None or call[2]:
        return None
    request_id, name, _, meta = call
    by_tool = calls.get(meta[PROTOCOL_VERSION_KEY], {})
    if name not in by_tool:
        return None
    return request_id, _result_line(request_id, by_tool[name])


def plain_request(frame: bytes, method: str) -> tuple[int | str, Any] | None:
    """(id, params) when `frame` is plain JSON (see _plain_json) making a `method` request
    with a plain id and params; None otherwise."""
    request = _plain_request(frame, (method,))
    return None if request is None else (request[0], request[2])


def _plain_request(frame: bytes, methods: Container[str]) -> tuple[int | str, str, Any] | None:
    """(id, method, params) when `frame` is plain JSON making a request for one of
    `methods` with a plain id and params; None otherwise."""
    try:
        request = _plain_json(frame)
        if not isinstance(request, dict) or set(request) != _LISTING_KEYS[1]:
            raise _Unsure
        method = request["method"]
        if request["jsonrpc"] != "2.0" or not isinstance(method, str) or method not in methods:
            raise _Unsure
        return _plain_id(request["id"]), method, request["params"]
    except _Unsure:
        return None


def plain_tool_call(
    frame: bytes, *, modern: bool = False
) -> tuple[int | str, str, dict[str, Any]] | None:
    """(id, tool name, arguments) when `frame` is a plain `tools/call` (arguments an
    object or absent, a `_meta` only when it holds just a progress token; with `modern`,
    a `_meta` that is a plain envelope of one of MODERN_PROTOCOL_VERSIONS); None otherwise
    (the SDK answers)."""
    call = _plain_call(frame, modern=modern)
    return None if call is None else call[:3]


def _plain_call(frame: bytes, *, modern: bool) -> tuple[int | str, str, dict[str, Any], Any] | None:
    """plain_tool_call's (id, tool name, arguments), with the call's `_meta` (None when
    absent)."""
    request = plain_request(frame, "tools/call")
    if request is None:
        return None
    request_id, params = request
    if not isinstance(params, dict) or not {"name"} <= set(params) <= _CALL_PARAMS:
        return None
    meta = params.get("_meta")
    if modern:
        if not _plain_envelope(meta):
            return None
    elif "_meta" in params and not _progress_token_only(meta):
        return None
    name, arguments = params["name"], params.get("arguments", {})
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    return request_id, name, arguments, meta


def _progress_token_only(meta: Any) -> bool:
    """A `_meta` asking for progress and nothing else, as a client sends whenever it is
    given a progress callback (the TypeScript SDK's does). The answer is the same without
    it: WorkRail's tools never report progress (tests/mcp/test_early_call.py compares)."""
    if not isinstance(meta, dict) or set(meta) != {"progressToken"}:
        return False
    return _progress_token(meta["progressToken"])


def _progress_token(token: Any) -> bool:
    return isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))


def _plain_envelope(meta: Any) -> bool:
    """A 2026-era request envelope the SDK serves, and nothing else in `_meta` but a
    progress token: the protocol version (one of ours), the client's capabilities and,
    optionally, its identity, both shaped as a plain `initialize` has them (the SDK
    refuses some other shapes; a tool's answer depends on neither)."""
    if not isinstance(meta, dict) or not _ENVELOPE_REQUIRED <= set(meta) <= _MODERN_META_KEYS:
        return False
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str) or version not in MODERN_PROTOCOL_VERSIONS:
        return False
    if "progressToken" in meta and not _progress_token(meta["progressToken"]):
        return False
    try:
        _capabilities(meta[_CLIENT_CAPABILITIES_KEY])
        if _CLIENT_INFO_KEY in meta:
            _client_info(meta[_CLIENT_INFO_KEY])
    except _Unsure:
        return False
    return True


def opens_modern_era(method: str, params: Mapping[str, Any] | None) -> bool:
    """The SDK's rule for the era of a connection its first request opens: the 2026 era
    when that request carries the envelope's protocol version and is not `initialize`."""
    meta = None if params is None else params.get("_meta")
    return method != "initialize" and isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta


def answer_cached_call(
    frame: bytes, results: Mapping[str, bytes]
) -> tuple[int | str, bytes] | None:
    """(request id, the answer's line) when `frame` is a plain `tools/call` without
    arguments of a tool in `results` (tool name → the `result` JSON the SDK wrote for that
    call); None otherwise."""
    call = plain_tool_call(frame)
    if call is None or call[2] or call[1] not in results:
        return None
    return call[0], _result_line(call[0], results[call[1]])


def _result_line(request_id: int | str, result: bytes) -> bytes:
    return b"".join(
        (b'{"jsonrpc":"2.0","id":', json.dumps(request_id).encode(), b',"result":', result, b"}")
    )


def _capabilities(capabilities: Any) -> None:
    """Objects all the way down (every capability the SDK models is an object of
    objects), except roots.listChanged, a boolean."""
    if not isinstance(capabilities, dict):
        raise _Unsure
    for name, value in capabilities.items():
        if name == "roots" and isinstance(value, dict):
            if set(value) - {"listChanged"} or not isinstance(
                value.get("listChanged", False), bool
            ):
                raise _Unsure
            continue
        _objects_only(value)


def _objects_only(value: Any) -> None:
    if not isinstance(value, dict):
        raise _Unsure
    for item in value.values():
        _objects_only(item)


def _client_info(info: Any) -> None:
    if not isinstance(info, dict) or not {"name", "version"} <= set(info) <= _CLIENT_INFO_KEYS:
        raise _Unsure
    if not all(isinstance(v, str) for v in info.values()):
        raise _Unsure
