"""The start-up `initialize` answer (workrail.mcp.handshake) is the SDK's, byte for byte:
for every protocol revision, with and without prompts and resources, for every request it
accepts; anything it is unsure of is left to the SDK. Over real processes, WorkRail's
stdio transport (which answers `initialize` before the SDK loads) and the SDK's own send
the same bytes, answer once, and the SDK's session is initialized by the replayed request.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types.version
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server import MCPServer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from tests.mcp.servers import stdio_server
from workrail.engine.api import Engine
from workrail.mcp import build_server
from workrail.mcp.catalog_gen import sdk_answer_lines
from workrail.mcp.content import has_content
from workrail.mcp.handshake import (
    CONSTANT_RESULTS,
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    answer_initialize,
    answer_listing,
    opens_modern_era,
)
from workrail.mcp.stdio import parse_frame

REVISIONS = [*mcp_types.version.KNOWN_PROTOCOL_VERSIONS, "2099-01-01", "", "latest"]


def _initialize(request_id: Any = 1, **params: Any) -> dict[str, Any]:
    body = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    body.update(params)
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": body}


def _frame(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode()


async def _sdk_answer(server: MCPServer, frame: bytes) -> bytes:
    """The SDK server's first answer to `frame`, serialized as WorkRail's transport does."""
    lowlevel = server._lowlevel_server
    to_server, read_stream = create_context_streams[SessionMessage | Exception](1)
    write_stream, from_server = create_context_streams[SessionMessage](1)
    parsed = parse_frame(frame)
    assert not isinstance(parsed, dict), parsed
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lowlevel.run, read_stream, write_stream, lowlevel.create_initialization_options()
            )
            await to_server.send(SessionMessage(parsed))
            with anyio.fail_after(30):
                answered = await from_server.receive()
            tg.cancel_scope.cancel()
    finally:
        for stream in (to_server, read_stream, write_stream, from_server):
            await stream.aclose()
    return answered.message.model_dump_json(by_alias=True, exclude_unset=True).encode()


def sdk_answer(server: MCPServer, frame: bytes) -> bytes:
    return anyio.run(_sdk_answer, server, frame)


@pytest.fixture(scope="module")
def servers(engines: dict[bool, Engine]) -> dict[bool, MCPServer]:
    return {offers: build_server(engine) for offers, engine in engines.items()}


def test_the_revisions_negotiated_are_the_sdks() -> None:
    assert HANDSHAKE_PROTOCOL_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    assert MODERN_PROTOCOL_VERSIONS == mcp_types.version.MODERN_PROTOCOL_VERSIONS
    assert PROTOCOL_VERSION_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert SERVER_INFO_KEY == mcp_types.SERVER_INFO_META_KEY


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}),
        ("server/discover", {"_meta": {PROTOCOL_VERSION_KEY: 5}}),
        ("initialize", {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}),
        ("tools/call", {"_meta": {"progressToken": 1}}),
        ("tools/call", {"_meta": [PROTOCOL_VERSION_KEY]}),
        ("tools/call", {}),
        ("ping", None),
    ],
)
def test_the_era_a_first_request_opens_is_the_sdks(method: str, params: Any) -> None:
    from mcp.server.runner import _has_modern_envelope

    sdk = method != "initialize" and _has_modern_envelope(params)
    assert opens_modern_era(method, params) is sdk


def test_content_is_decided_as_the_server_decides_it(engines: dict[bool, Engine]) -> None:
    assert {offers: has_content(engine) for offers, engine in engines.items()} == {
        True: True,
        False: False,
    }


@pytest.mark.parametrize("offers", [True, False], ids=["content", "bare"])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("request_id", [1, 0, -7, 2**53 - 1, "init-1", "a"])
def test_the_answer_is_the_sdks_for_every_revision(
    servers: dict[bool, MCPServer], offers: bool, revision: str, request_id: Any
) -> None:
    frame = _frame(_initialize(request_id, protocolVersion=revision))
    early = answer_initialize(frame, offers_content=offers)
    assert early is not None
    assert early == (request_id, sdk_answer(servers[offers], frame))


@pytest.mark.parametrize("offers", [True, False], ids=["content", "bare"])
@pytest.mark.parametrize("revision", HANDSHAKE_PROTOCOL_VERSIONS)
def test_a_constant_answer_is_the_sdks_for_every_revision(
    servers: dict[bool, MCPServer], offers: bool, revision: str
) -> None:
    """`ping`, answered without the SDK once `initialize` was, plain (no params, or
    empty ones)."""
    shapes: list[dict[str, Any]] = [{}, {"params": {}}]
    for method in CONSTANT_RESULTS:
        frames = [
            _frame({"jsonrpc": "2.0", "id": request_id, "method": method, **shape})
            for request_id in [1, 0, -7, 2**53 - 1, "ping-1", "a"]
            for shape in shapes
        ]
        sdk = sdk_answer_lines(servers[offers], revision, frames)
        for frame, expected in zip(frames, sdk, strict=True):
            early = answer_listing(frame, CONSTANT_RESULTS)
            assert early is not None, frame
            assert early[1] == expected, frame


REAL_CLIENTS = {
    "mcp python sdk": {
        "capabilities": {"experimental": {}, "roots": {"listChanged": True}},
        "clientInfo": {"name": "mcp", "version": "0.1.0"},
    },
    "claude code": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "claude-code", "version": "2.0.14"},
    },
    "vs code": {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "roots": {"listChanged": True},
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
        },
        "clientInfo": {"name": "Visual Studio Code", "version": "1.107.0"},
    },
    "inspector": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}},
        "clientInfo": {"name": "inspector-client", "version": "0.17.0"},
    },
    "codex": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.50.0"},
    },
    "tasks and extensions": {
        "capabilities": {
            "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
            "extensions": {"io.example/x": {}},
        },
        "clientInfo": {
            "name": "x",
            "version": "1",
            "description": "d",
            "websiteUrl": "https://example.com",
        },
    },
}


@pytest.mark.parametrize("params", REAL_CLIENTS.values(), ids=list(REAL_CLIENTS))
def test_what_clients_send_is_answered_early_and_as_the_sdk_does(
    servers: dict[bool, MCPServer], params: dict[str, Any]
) -> None:
    frame = _frame(_initialize(3, **params))
    early = answer_initialize(frame, offers_content=True)
    assert early is not None
    assert early[1] == sdk_answer(servers[True], frame)


def _nested(depth: int) -> dict[str, Any]:
    return {"a": _nested(depth - 1)} if depth else {}


UNSURE = {
    "_meta": _frame(_initialize(_meta={"progressToken": 1})),
    "unknown param": _frame(_initialize(extra=1)),
    "no clientInfo": _frame(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    ),
    "numeric version": _frame(_initialize(protocolVersion=20250618)),
    "null capabilities": _frame(_initialize(capabilities=None)),
    "capability not an object": _frame(_initialize(capabilities={"roots": True})),
    "listChanged a string": _frame(_initialize(capabilities={"roots": {"listChanged": "yes"}})),
    "tasks with a string": _frame(_initialize(capabilities={"tasks": {"list": "x"}})),
    "clientInfo without version": _frame(_initialize(clientInfo={"name": "t"})),
    "clientInfo icons": _frame(
        _initialize(clientInfo={"name": "t", "version": "1", "icons": [{"src": "x"}]})
    ),
    "bool id": _frame(_initialize(True)),
    "float id": _frame(_initialize(1.5)),
    "null id": _frame(_initialize(None)),
    "huge id": _frame(_initialize(2**53)),
    "id needing escapes": _frame(_initialize('a"b')),
    "non-ascii id": _frame(_initialize("é")),
    "notification": _frame({k: v for k, v in _initialize().items() if k != "id"}),
    "another method": _frame({**_initialize(), "method": "ping"}),
    "jsonrpc 1.0": _frame({**_initialize(), "jsonrpc": "1.0"}),
    "extra top-level key": _frame({**_initialize(), "x": 1}),
    "duplicate key": b'{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize","params":'
    b'{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
    "NaN": _frame(_initialize(capabilities={"experimental": {"x": {"n": float("nan")}}})),
    "float": _frame(_initialize(capabilities={"experimental": {"x": {"n": 1.0}}})),
    "surrogate escape": _frame(_initialize(clientInfo={"name": "\\ud83d", "version": "1"})),
    "lone surrogate": b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
    b'{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"\\ud83d",'
    b'"version":"1"}}}',
    "deep nesting": _frame(_initialize(capabilities={"experimental": {"x": _nested(40)}})),
    "not json": b'{"jsonrpc":"2.0","id":1,"method":"initialize"',
    "not an object": b"[1,2,3]",
    "invalid utf-8": b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":\xff}',
}


@pytest.mark.parametrize("frame", UNSURE.values(), ids=list(UNSURE))
def test_anything_unsure_is_left_to_the_sdk(frame: bytes) -> None:
    assert answer_initialize(frame, offers_content=True) is None


_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.floats(), st.text(max_size=8)
)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_capability_names = st.sampled_from(
    ["roots", "sampling", "elicitation", "experimental", "tasks", "extensions", "other"]
)
_keys = st.sampled_from(
    ["listChanged", "form", "url", "context", "tools", "list", "cancel", "requests"]
    + ["sampling", "createMessage", "create", "x"]
)
_objects: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.just({}), lambda inner: st.dictionaries(_keys, inner, max_size=3), max_leaves=8
)
"""Objects of objects: what every capability the SDK models is made of."""
_near_objects: st.SearchStrategy[Any] = st.recursive(
    st.just({}) | _json_leaf,
    lambda inner: st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_capability = st.one_of(
    _objects,
    _objects,
    st.fixed_dictionaries({"listChanged": st.booleans() | _json_leaf}),
    _near_objects,
)
_text = st.text(max_size=5)
_client_info = st.fixed_dictionaries(
    {"name": _text, "version": _text},
    optional={
        "title": _text | _json_leaf,
        "description": _text,
        "websiteUrl": _text | _json_leaf,
        "icons": _json,
    },
) | st.fixed_dictionaries({"name": _json_leaf, "version": _json_leaf})
_core = st.fixed_dictionaries(
    {
        "protocolVersion": st.one_of(*[st.sampled_from(REVISIONS)] * 3, _json_leaf),
        "capabilities": st.dictionaries(_capability_names, _capability, max_size=3),
        "clientInfo": _client_info,
    }
)
_params = st.one_of(
    _core,
    _core,
    _core.flatmap(
        lambda core: st.fixed_dictionaries({"_meta": _json, "other": _json}).map(
            lambda extra: {**core, **extra}
        )
    ),
    st.dictionaries(st.sampled_from(["protocolVersion", "capabilities", "clientInfo"]), _json),
)
_plain_ids = st.integers(-1000, 1000) | st.from_regex(r"[A-Za-z0-9_.:-]{1,8}", fullmatch=True)
_ids = st.one_of(
    _plain_ids,
    _plain_ids,
    _plain_ids,
    st.integers(-(2**54), 2**54) | st.text(max_size=6) | st.none() | st.booleans(),
)


_valid = st.fixed_dictionaries(
    {
        "protocolVersion": st.sampled_from(REVISIONS),
        "capabilities": st.fixed_dictionaries(
            {},
            optional={
                "roots": st.fixed_dictionaries({}, optional={"listChanged": st.booleans()}),
                **dict.fromkeys(["sampling", "elicitation", "tasks", "other"], _objects),
            },
        ),
        "clientInfo": st.fixed_dictionaries(
            {"name": st.text(), "version": st.text()},
            optional={"title": st.text(), "description": st.text(), "websiteUrl": st.text()},
        ),
    }
)
"""Requests like those real clients send (most of them answered early)."""


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _paths(item, (*prefix, key))
    return paths


@st.composite
def _one_change(draw: st.DrawFn) -> dict[str, Any]:
    """A request like a real client's with one value replaced, or one key added."""
    params: dict[str, Any] = copy.deepcopy(draw(_valid))  # drawn values are not ours to change
    paths = _paths(params)
    deep = [path for path in paths if len(path) > 1]  # inside capabilities or clientInfo
    path = draw(st.sampled_from(paths) | st.sampled_from(deep or paths))
    *parents, last = path
    holder = params
    for key in parents:
        holder = holder[key]
    if draw(st.booleans()):
        holder[last] = draw(_json | _objects)
    elif isinstance(holder[last], dict):
        holder[last][draw(_keys | st.text(max_size=4))] = draw(_json)
    return params


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_id=_ids, params=_valid | _one_change() | _params, offers=st.booleans())
def test_every_request_answered_early_gets_the_same_answer_from_the_sdk(
    servers: dict[bool, MCPServer], request_id: Any, params: dict[str, Any], offers: bool
) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    try:
        frame = json.dumps(message, ensure_ascii=False).encode()
    except ValueError:
        return
    early = answer_initialize(frame, offers_content=offers)
    if early is not None:
        assert early == (request_id, sdk_answer(servers[offers], frame))


# --- over real processes --------------------------------------------------------------------

_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
_TOOLS_LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'


def _talk(data_dir: Path, stdio: str, *frames: bytes, answers: int) -> list[bytes]:
    """Send `frames`, read `answers` lines, then close stdin (the SDK's own transport
    drops requests still in flight at EOF, so the answers are read first)."""
    with stdio_server(data_dir, "--stdio", stdio) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        try:
            proc.stdin.write(b"".join(f + b"\n" for f in frames))
            proc.stdin.flush()
            lines = [proc.stdout.readline().rstrip(b"\n") for _ in range(answers)]
            proc.stdin.close()
            rest = proc.stdout.read()
            errors = proc.stderr.read()
            assert proc.wait(timeout=60) == 0, errors
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rest == b"", "an answer too many"
    assert b"sent at start-up to the first request differs" not in errors
    return lines


@pytest.mark.parametrize(
    "first",
    [_frame(_initialize(1)), _frame(_initialize(1, _meta={"progressToken": 9}))],
    ids=["answered early", "left to the sdk"],
)
def test_both_transports_answer_initialize_once_with_the_same_bytes(
    data_dir: Path, first: bytes
) -> None:
    ours = _talk(data_dir, "workrail", first, _INITIALIZED, _TOOLS_LIST, answers=2)
    sdks = _talk(data_dir, "sdk", first, _INITIALIZED, _TOOLS_LIST, answers=2)
    assert ours[0] == sdks[0]
    assert json.loads(ours[0])["result"]["serverInfo"]["name"] == "workrail"
    # The SDK's session saw the replayed initialize: it serves tools/list.
    tools = json.loads(ours[1])
    assert tools["id"] == 2
    assert [t["name"] for t in tools["result"]["tools"]]
    assert ours[1] == sdks[1]


def test_frames_before_initialize_are_served_in_order(data_dir: Path) -> None:
    ping = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
    answers = _talk(data_dir, "workrail", b"", ping, _frame(_initialize(1)), _TOOLS_LIST, answers=3)
    assert [json.loads(a)["id"] for a in answers] == ["p", 1, 2]


def test_requests_sent_while_the_server_loads_are_all_answered_as_the_sdk_answers_them(
    data_dir: Path,
) -> None:
    """A client that pipelines its first requests behind `initialize` (before the SDK's
    server exists) gets every one answered, once, with the SDK's own answers."""
    burst = [
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":3,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":4,"method":"prompts/list"}',
        b'{"jsonrpc":"2.0","id":5,"method":"resources/list"}',
        b'{"jsonrpc":"2.0","id":6,"method":"no/such/method"}',
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_workflows",'
        b'"arguments":{}}}',
    ]
    first = _frame(_initialize(1))
    ours = _talk(data_dir, "workrail", first, _INITIALIZED, *burst, answers=1 + len(burst))
    sdks = _talk(data_dir, "sdk", first, _INITIALIZED, *burst, answers=1 + len(burst))
    assert ours[0] == sdks[0]

    def by_id(lines: list[bytes]) -> dict[int, Any]:
        answers = [json.loads(line) for line in lines]
        assert len({a["id"] for a in answers}) == len(answers), "an id answered twice"
        return {a["id"]: a for a in answers}

    assert by_id(ours) == by_id(sdks)
    assert set(by_id(ours)) == set(range(1, 8))
    assert by_id(ours)[6]["error"]["code"] == -32601


def test_a_client_that_speaks_after_the_server_is_up_is_answered_by_the_sdk(
    data_dir: Path,
) -> None:
    with stdio_server(data_dir) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        try:
            # The ready line is logged once the SDK's server is built (INFO, stderr not a tty).
            for line in proc.stderr:
                if b"ready on stdio" in line:
                    break
            else:
                raise AssertionError("the server never said it was ready")
            proc.stdin.write(_frame(_initialize(1)) + b"\n" + _TOOLS_LIST + b"\n")
            proc.stdin.close()
            answers = proc.stdout.read().splitlines()
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    early = answer_initialize(_frame(_initialize(1)), offers_content=True)
    assert early is not None
    assert len(answers) == 2
    assert answers[0] == early[1]


def _modern_call(request_id: int, name: str, **meta: Any) -> bytes:
    envelope = {
        PROTOCOL_VERSION_KEY: "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **meta,
    }
    arguments = {"workflowId": "nope"} if name == "inspect_workflow" else {}
    params = {"name": name, "arguments": arguments, "_meta": envelope}
    return _frame({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _plain_call(request_id: int) -> bytes:
    params = {"name": "inspect_workflow", "arguments": {"workflowId": "nope"}}
    return _frame({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _by_id(lines: list[bytes]) -> dict[Any, Any]:
    answers = [json.loads(line) for line in lines]
    assert len({a["id"] for a in answers}) == len(answers), "an id answered twice"
    return {a["id"]: a for a in answers}


def test_a_connection_in_the_2026_era_is_answered_as_the_sdk_answers_it(data_dir: Path) -> None:
    """The first request decides the era, as for the SDK: after a 2026-era one, that era's
    calls are answered (stamped), a plain call or an `initialize` is refused."""
    frames = [
        _modern_call(1, "inspect_workflow"),
        _modern_call(2, "inspect_workflow"),
        _modern_call(3, "list_workflows", progressToken="p"),
        _plain_call(4),
        _frame(_initialize(5)),
        _modern_call(6, "inspect_workflow", **{PROTOCOL_VERSION_KEY: "2025-11-25"}),
    ]
    ours = _by_id(_talk(data_dir, "workrail", *frames, answers=len(frames)))
    sdks = _by_id(_talk(data_dir, "sdk", *frames, answers=len(frames)))
    assert ours == sdks
    assert ours[2]["result"]["resultType"] == "complete"
    assert ours[2]["result"]["_meta"][SERVER_INFO_KEY]["name"] == "workrail"
    assert ours[3]["result"]["isError"] is False
    assert {n for n, a in ours.items() if "error" in a} == {4, 5, 6}


def test_a_connection_opened_by_initialize_refuses_2026_era_calls(data_dir: Path) -> None:
    frames = [
        _frame(_initialize(1)),
        _INITIALIZED,
        _modern_call(2, "inspect_workflow"),
        _plain_call(3),
    ]
    ours = _by_id(_talk(data_dir, "workrail", *frames, answers=3))
    sdks = _by_id(_talk(data_dir, "sdk", *frames, answers=3))
    assert ours == sdks
    assert "error" in ours[2]
    assert ours[3]["result"]["isError"] is True  # the workflow does not exist
